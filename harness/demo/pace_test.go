package demo

import (
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/scenarios"
)

func TestPaced(t *testing.T) {
	ms := time.Millisecond
	in := []scenarios.Arrival{{At: -100 * ms}, {At: -99 * ms}, {At: -98 * ms}, {At: 100 * ms}, {At: 101 * ms}}
	got := Paced(in, 10)
	want := []time.Duration{-100 * ms, -90 * ms, -80 * ms, 100 * ms, 110 * ms}
	for i := range want {
		if got[i].At != want[i] {
			t.Errorf("arrival %d: at %v, want %v", i, got[i].At, want[i])
		}
	}
	if in[1].At != -99*ms {
		t.Error("Paced changed its input")
	}
	if got := Paced(in, 1); got[1].At != -99*ms {
		t.Errorf("pace 1: %v", got[1].At)
	}
}

// The default demo (50 per 10s: bursts of 50 requests 1 ms apart at -1s
// and +1s) takes up to 20x; a pace past MaxPace or below 1 names the field.
func TestPaceValidate(t *testing.T) {
	if m := MaxPace(limit.Limit{}); m < 20 || m > 20.3 {
		t.Errorf("MaxPace(default) = %g, want 20..20.3", m)
	}
	for _, tc := range []struct {
		pace float64
		want string
	}{{0, ""}, {1, ""}, {20, ""}, {0.5, "pace: must be >= 1"}, {25, "pace: at most 20"}} {
		err := Config{Pace: tc.pace}.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("pace %g: %v, want %q", tc.pace, err, tc.want)
		}
	}
	// paced to its most, the burst before the boundary still ends before it
	l := limit.Limit{Count: 50, Window: 10 * time.Second}
	sc, _ := scenarios.Get(Scenario)
	arr := Paced(sc.Build(scenarios.Params{Limit: l.Count, Window: l.Window}).Arrivals, MaxPace(l))
	if last := arr[l.Count-1].At; last >= 0 {
		t.Errorf("the first burst's last request at %v, want before the boundary", last)
	}
}

// ParsePace reads "20x", "20" and " 2.5x "; anything else is an error
// naming pace that quotes what was given.
func TestParsePace(t *testing.T) {
	for in, want := range map[string]float64{"20x": 20, "20": 20, " 2.5x ": 2.5, "1x": 1} {
		if got, err := ParsePace(in); err != nil || got != want {
			t.Errorf("%q: got %g, %v; want %g", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "fast", "20xx"} {
		if _, err := ParsePace(in); err == nil || !strings.HasPrefix(err.Error(), "pace: want a factor such as 20x, got ") {
			t.Errorf("%q: got %v; want an error naming pace", in, err)
		}
	}
}
