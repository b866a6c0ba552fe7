package scenarios

import (
	"testing"
	"time"
)

// The dense family's ladder steps by the resolution at any window: before
// each emission boundary its last request is one resolution early, and its
// size does not grow with W.
func TestDenseFineTrialSteps(t *testing.T) {
	for _, c := range []struct {
		limit int64
		w     time.Duration
		res   time.Duration
	}{
		{20, time.Minute, time.Microsecond},
		{20, time.Hour, time.Microsecond},
		{20, 24 * time.Hour, time.Millisecond},
		{1000, time.Hour, time.Microsecond},
		{10_000, 24 * time.Hour, time.Microsecond},
	} {
		tr, ok := DenseFineTrial(Params{Limit: c.limit, Window: c.w}, c.res)
		if !ok {
			t.Fatalf("%d per %s: no ladder", c.limit, c.w)
		}
		arr := tr.Schedule.Arrivals
		if n := int64(len(arr)); n > 2*(c.limit+2)+10_000 {
			t.Errorf("%d per %s: %d requests", c.limit, c.w, n)
		}
		T := c.w / time.Duration(c.limit)
		on := map[time.Duration]bool{}
		for _, a := range arr {
			on[a.At] = true
		}
		for k := int64(1); k <= c.limit+1; k++ {
			b := time.Duration(k) * T
			if !on[b] || !on[b-c.res] {
				t.Fatalf("%d per %s: boundary %s: on it %v, one resolution before it %v", c.limit, c.w, b, on[b], on[b-c.res])
			}
		}
		for i := 1; i < len(arr); i++ {
			if arr[i].At <= arr[i-1].At {
				t.Fatalf("%d per %s: not increasing at %d", c.limit, c.w, i)
			}
		}
	}
	if _, ok := DenseFineTrial(Params{Limit: 1000, Window: time.Millisecond}, time.Microsecond); ok {
		t.Error("an interval of 1µs: the uniform stream covers it, want no ladder")
	}
}

// The cautious client's trials never plan more than L in the window they
// believe in, and end with a burst of L just after it.
func TestCautiousTrials(t *testing.T) {
	p := Params{Limit: 20, Window: time.Minute}
	trs := CautiousTrials(p, 0)
	if len(trs) != 2 {
		t.Fatalf("%d trials", len(trs))
	}
	for _, tr := range trs {
		pr := tr.Program
		if pr == nil || !pr.Cautious || !tr.Adaptive() {
			t.Fatalf("%s: %+v", tr.Name, tr)
		}
		last := pr.Bursts[len(pr.Bursts)-1]
		var before int64
		for _, b := range pr.Bursts[:len(pr.Bursts)-1] {
			before += b.N
			if end := b.At + time.Duration(b.N-1)*b.Step; end >= last.At {
				t.Errorf("%s: a burst ends at %s, not before the last at %s", tr.Name, end, last.At)
			}
		}
		if before > p.Limit || last.N != p.Limit || int64(pr.Calls()) != before+p.Limit || tr.MaxCalls() != pr.Calls() {
			t.Errorf("%s: %d before, %d in the last burst", tr.Name, before, last.N)
		}
	}
	if CautiousTrials(Params{Limit: AdaptiveMaxLimit + 1, Window: time.Second}, 0) != nil {
		t.Error("above AdaptiveMaxLimit: want none")
	}
}
