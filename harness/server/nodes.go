package server

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// NodeKeys is one master of a cluster (or the one server) and how many of
// a prefix's keys it holds.
type NodeKeys struct {
	// Addr is the master's address as the client reaches it.
	Addr string `json:"addr"`
	// Keys is the number of keys under the prefix on this master.
	Keys int64 `json:"keys"`
	// UsedMemoryBytes is the master's INFO used_memory when counted.
	UsedMemoryBytes int64 `json:"used_memory_bytes"`
}

// KeysByNode counts the keys under prefix on every master of c (SCAN per
// master) and reads each master's used_memory, in address order. A single
// server gives one entry.
func KeysByNode(ctx context.Context, c redis.UniversalClient, prefix string) ([]NodeKeys, error) {
	count := func(ctx context.Context, node *redis.Client) (NodeKeys, error) {
		keys, err := ScanKeys(ctx, node, prefix)
		if err != nil {
			return NodeKeys{}, err
		}
		nk := NodeKeys{Addr: node.Options().Addr, Keys: int64(len(keys))}
		info, err := node.Info(ctx, "memory").Result()
		if err != nil {
			return nk, err
		}
		nk.UsedMemoryBytes, _ = strconv.ParseInt(InfoFields(info)["used_memory"], 10, 64)
		return nk, nil
	}
	switch cc := c.(type) {
	case *redis.Client:
		nk, err := count(ctx, cc)
		return []NodeKeys{nk}, err
	case *redis.ClusterClient:
		var mu sync.Mutex
		var out []NodeKeys
		err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			nk, err := count(ctx, node)
			mu.Lock()
			out = append(out, nk)
			mu.Unlock()
			return err
		})
		slices.SortFunc(out, func(a, b NodeKeys) int { return strings.Compare(a.Addr, b.Addr) })
		return out, err
	}
	return nil, fmt.Errorf("KeysByNode: unsupported client %T", c)
}

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
