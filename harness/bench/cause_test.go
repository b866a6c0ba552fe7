package bench_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/harness/bench"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/targets"
)

// When every call of the warm-up fails (a Redis turned read-only replica,
// out of memory, a broken script), bench's error carries the calls' own
// error, which names the cause (server.Explain reads READONLY and OOM from
// it), never a count of failed decisions in place of it.
func TestRunWarmUpFailureNamed(t *testing.T) {
	const src = "return redis.error_reply('ERR the limiter is broken')"
	cfg := (bench.Config{}).WithDefaults()
	cfg.Algorithms, cfg.Paths, cfg.Clients = nil, []string{measure.PathAllow}, 2
	cfg.Duration = 200 * time.Millisecond
	cfg.Targets = []targets.Target{{Name: "broken.lua", New: func(rdb redis.Scripter, l limit.Limit) (algorithms.Limiter, error) {
		return custom.NewScriptLimiter(rdb, "broken.lua", src, []string{"{limit}"}, 1, l)
	}}}
	_, err := bench.Run(ctx, srv.Redis, cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "warm-up") || !strings.Contains(err.Error(), "the limiter is broken") ||
		strings.Contains(err.Error(), "every decision failed") {
		t.Errorf("got %v, want the warm-up's calls' own error", err)
	}
	t.Log(err)
}
