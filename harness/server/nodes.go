package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Nodes returns the servers capacity measures memory on, and the
// database number: the server itself, or every master of a cluster (db 0).
func Nodes(ctx context.Context, c redis.UniversalClient) ([]*redis.Client, int, error) {
	switch cc := c.(type) {
	case *redis.Client:
		return []*redis.Client{cc}, cc.Options().DB, nil
	case *redis.ClusterClient:
		var mu sync.Mutex
		var nodes []*redis.Client
		err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			mu.Lock()
			nodes = append(nodes, node)
			mu.Unlock()
			return nil
		})
		slices.SortFunc(nodes, func(a, b *redis.Client) int { return strings.Compare(a.Options().Addr, b.Options().Addr) })
		return nodes, 0, err
	}
	return nil, 0, fmt.Errorf("capacity needs a single Redis server or a Redis Cluster, not %T", c)
}
