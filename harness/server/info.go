package server

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// InfoFields parses INFO output into field -> value.
func InfoFields(info string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// RunIDs returns the run_id (INFO server) of every server of c: the server
// itself, or every master of a Cluster, by address.
func RunIDs(ctx context.Context, c redis.UniversalClient) (map[string]string, error) {
	nodes, _, err := Nodes(ctx, c)
	if err != nil {
		return nil, err
	}
	ids := make(map[string]string, len(nodes))
	for _, n := range nodes {
		info, err := n.Info(ctx, "server").Result()
		if err != nil {
			return nil, err
		}
		if id := InfoFields(info)["run_id"]; id != "" {
			ids[n.Options().Addr] = id
		}
	}
	return ids, nil
}
