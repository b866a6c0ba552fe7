package reports

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/measure"
)

func verifyFixture(violated bool) *measure.VerifyReport {
	r := &measure.VerifyReport{Target: "fixed-window", LimitDesc: "50 per 2s", Limit: 50, WindowMS: 2000,
		Header:  measure.Header{DurationMS: 2300, Complete: true},
		Verdict: measure.Holds, Clock: "virtual+real", Decisions: 7110,
		SkewDeltaMS: 20, SkewSensitivity: 2,
		Families: []measure.FamilyResult{
			{Family: "boundary", Trials: 3, Verdict: measure.Holds, MaxRatio: 1, Mode: "virtual"},
			{Family: "overload", Trials: 2, Verdict: measure.Holds, MaxRatio: 1, MinFidelity: 0.97, Mode: "virtual"},
			{Family: "isolation", Trials: 2, Verdict: measure.Holds, Mode: "virtual"},
			{Family: "weighted", Verdict: measure.Skipped, Note: "the target takes no cost (no {cost} argument)"},
		},
	}
	if violated {
		r.Verdict = measure.Violated
		r.Families[0].Verdict, r.Families[0].MaxRatio = measure.Violated, 2
		var ds []measure.Evidence
		trace := &measure.Trace{AnchorUS: 1767225600000000, WindowMS: 2000, Shrunk: true, FromRequests: 40, Replays: 12, Minimal: true, CSV: "counter-example.csv"}
		for i := int64(0); i < 14; i++ {
			ds = append(ds, measure.Evidence{Key: "user", Cost: 1, AtUS: -7 + i})
			trace.Requests = append(trace.Requests, measure.Step{AtUS: -7 + i, Key: "user", Cost: 1, Allowed: true})
		}
		r.CounterExample = &measure.CounterExample{Family: "boundary", Trial: "L ending 1µs before the boundary, L from it",
			Kind: measure.Violated, Accepted: 14, Limit: 7, StartUS: -7, EndUS: 6, Decisions: ds,
			Explain: "14 accepted within 13µs (less than the window 2s): 2.00x the limit of 7", Trace: trace}
	}
	return r
}

func TestWriteVerifyGolden(t *testing.T) {
	for _, c := range []struct {
		name     string
		violated bool
	}{{"verify-holds", false}, {"verify-violated", true}} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteVerify(&b, "table", verifyFixture(c.violated)); err != nil {
				t.Fatal(err)
			}
			golden(t, c.name+".golden", b.Bytes())
		})
	}
	var b bytes.Buffer
	if err := WriteVerify(&b, "json", verifyFixture(true)); err != nil {
		t.Fatal(err)
	}
	var back measure.VerifyReport
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.CounterExample == nil || len(back.CounterExample.Decisions) != 14 {
		t.Errorf("json round trip: %v %+v", err, back.CounterExample)
	}
	// a format verify does not take names the field, not a flag
	for _, f := range []Format{"xml", Markdown, CSV} {
		err := Render(&b, f, verifyFixture(false))
		if name, _ := field.Name(err); name != "format" || !strings.Contains(err.Error(), "want table or json") {
			t.Errorf("Render(%s): %v, want a format field error", f, err)
		}
	}
}
