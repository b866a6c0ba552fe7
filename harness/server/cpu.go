package server

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// CPU is the CPU time redis-server has used since it started, summed over
// the nodes of c (the server, or every master of a cluster): INFO cpu's
// used_cpu_user + used_cpu_sys, seconds. Cores is the number of nodes
// summed: the ceiling of a run is one busy core per node, so a run's CPU
// change divided by (wall time x Cores) is the fraction of that ceiling it
// reached. Errors: INFO refused or the nodes not found; a field Redis does
// not print counts zero. Safe for concurrent use (c is).
func CPU(ctx context.Context, c redis.UniversalClient) (seconds float64, cores int, err error) {
	nodes, _, err := Nodes(ctx, c)
	if err != nil {
		return 0, 0, err
	}
	for _, n := range nodes {
		info, err := n.Info(ctx, "cpu").Result()
		if err != nil {
			return 0, 0, err
		}
		seconds += CPUSeconds(InfoFields(info))
	}
	return seconds, len(nodes), nil
}

// CPUSeconds is the CPU time in INFO fields f (InfoFields of an INFO
// answer holding its cpu section): used_cpu_user + used_cpu_sys, seconds;
// a field missing or not a number counts zero.
func CPUSeconds(f map[string]string) float64 {
	u, _ := strconv.ParseFloat(f["used_cpu_user"], 64)
	s, _ := strconv.ParseFloat(f["used_cpu_sys"], 64)
	return u + s
}
