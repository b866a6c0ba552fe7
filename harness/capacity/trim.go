package capacity

import (
	"context"

	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// trimFilled and trimKept are the trim measurement's sizes: keys filled to
// trimFilled entries keep trimKept of them (+1, the trimming decision).
const (
	trimFilled = 200
	trimKept   = 50
	trimKeys   = 20
)

// measureTrim fills trimKeys sliding-log keys to trimFilled entries, trims
// them with one decision a window later so that trimKept entries (+1) stay,
// and compares them with keys filled to that many entries directly.
func (m *meter) measureTrim(ctx context.Context, cfg Config, prefix string) (*measure.TrimResult, error) {
	l := limit.Limit{Count: trimFilled, Window: cfg.window()}
	plan := FillPlan("sliding-log", l)
	keys, err := m.fillKeys(ctx, "sliding-log", l, plan, prefix+"t:", trimKeys, nil)
	if err != nil {
		return nil, err
	}
	// one decision at the time the (trimFilled-trimKept)-th oldest entry leaves the window
	cut := plan[trimFilled-trimKept-1].Offset + l.Window
	if _, err := m.fillKeys(ctx, "sliding-log", l, []FillCall{{cut, 1}}, prefix+"t:", trimKeys, nil); err != nil {
		return nil, err
	}
	tr := &measure.TrimResult{Algorithm: "sliding-log", Keys: trimKeys, FilledEntries: trimFilled}
	var mu int64
	if _, tr.Encoding, tr.Entries, err = describeKey(ctx, m.c, keys[0]); err != nil {
		return nil, err
	}
	if mu, err = server.MemoryUsage(ctx, m.c, keys); err != nil {
		return nil, err
	}
	tr.MemoryBytes = mu / int64(len(keys))

	fresh := limit.Limit{Count: tr.Entries, Window: cfg.window()}
	fkeys, err := m.fillKeys(ctx, "sliding-log", fresh, FillPlan("sliding-log", fresh), prefix+"f:", trimKeys, nil)
	if err != nil {
		return nil, err
	}
	if _, tr.FreshEncoding, _, err = describeKey(ctx, m.c, fkeys[0]); err != nil {
		return nil, err
	}
	if mu, err = server.MemoryUsage(ctx, m.c, fkeys); err != nil {
		return nil, err
	}
	tr.FreshMemoryBytes = mu / int64(len(fkeys))
	return tr, m.drop(ctx, prefix)
}
