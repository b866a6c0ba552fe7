package capacity

import (
	"slices"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/targets"
)

// estimateBytes is the upper bound of bytes Run writes at once
// (harness.BytesPerUnit per fill call, each adding at most one key, member
// or field): the largest cell (KeysFor keys x PlanCalls), the largest
// calibration (as many small hashes, at least minCalibrationKeys) and the
// sliding-log trim measurement, as if all were held together (each is
// removed before the next in fact).
func (cfg Config) estimateBytes() int64 {
	var cell, cal int64
	for _, alg := range append(slices.Clone(cfg.Algorithms), targets.Names(cfg.Targets)...) {
		for _, lim := range cfg.Limits {
			l := forAlgorithm(alg, lim)
			n := int64(KeysFor(cfg.Keys, fillSteps(alg, l), cfg.Budget))
			cell = max(cell, n*PlanCalls(alg, l)*harness.BytesPerUnit)
			cal = max(cal, max(n, minCalibrationKeys)*harness.BytesPerUnit)
		}
	}
	var trim int64
	if slices.Contains(cfg.Algorithms, "sliding-log") {
		trim = trimKeys * (trimFilled + 1) * harness.BytesPerUnit
	}
	return cell + cal + trim
}
