package bench

import (
	"time"

	"github.com/ratelab/ratelab/harness"
)

// maxDecisionsPerSec bounds how fast one Redis server decides, for
// estimateBytes: well above the fastest measured (about 225,000 EVALSHA/s
// on the deny path at pipeline 16, NOTES.md).
const maxDecisionsPerSec = 300_000

// estimateBytes is the upper bound of bytes one bench run writes (a run's
// keys are removed before the next): its decisions (Requests, else
// Duration at Rate or at maxDecisionsPerSec), each of cost 1 and at most
// harness.BytesPerUnit, and never more than Keys keys full to the limit
// in each window the run can span.
func (cfg Config) estimateBytes() int64 {
	decisions := cfg.Requests
	if decisions <= 0 {
		rate := float64(maxDecisionsPerSec)
		if cfg.Rate > 0 {
			rate = min(cfg.Rate, rate)
		}
		decisions = int64(cfg.Duration.Seconds()*rate) + 1
	}
	if cfg.Requests <= 0 && cfg.Limit.Window > 0 && cfg.Limit.Count > 0 {
		windows := int64(cfg.Duration/max(cfg.Limit.Window, time.Millisecond)) + 2
		decisions = min(decisions, int64(max(cfg.Keys, 1))*cfg.Limit.Count*windows)
	}
	return decisions * harness.BytesPerUnit
}
