package custom

import (
	_ "embed"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/limit"
)

//go:embed sliding_log_naive.lua
var slidingLogNaiveSrc string

// NewSlidingLogNaive returns sliding-log-naive: the sliding-window log of
// seeds 000 and 001 (ZREMRANGEBYSCORE, ZCARD, then ZADD and PEXPIRE when
// under the limit) sent as separate commands from the client, not as one
// atomic script: a ClientSide limiter running sliding_log_naive.lua. Alone
// it decides as sliding-log does; with concurrent clients two of them can
// both count L-1 and both add — the race the seeds wrote their script
// against, which verify's race family finds. rdb is a *redis.Client or
// *redis.ClusterClient. Errors: l.Validate's.
func NewSlidingLogNaive(rdb redis.Scripter, l limit.Limit) (*ClientSide, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	l.Precision = 0
	c, err := NewClientSide(rdb, ScriptConfig{Name: "sliding-log-naive", Source: slidingLogNaiveSrc,
		Args: []string{"{limit}", "{window_us}", "{cost}", "{now_us}", "{request_id}"}, Limit: l})
	if err != nil {
		return nil, err
	}
	c.desc = l.String() + ", client-side commands"
	caps := algorithms.BuiltInCapabilities()
	c.caps = &caps
	c.decode = func(_ algorithms.ScriptCall, reply any) (algorithms.Decision, error) {
		return algorithms.ParseReply(reply)
	}
	return c, nil
}
