package verify

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/targets"
)

// planFor plans the verification of the Lua file name (testdata) with
// args, without Redis, and returns the study and its plan.
func planFor(t *testing.T, name string, args []string, l limit.Limit, progress *bytes.Buffer) (*study, plan) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	lim, err := targets.Spec{Name: name, Script: name, Source: string(src), Args: args}.Build(nil, l)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Limits: []limit.Limit{l}, Progress: progress}.WithDefaults()
	st := &study{lim: lim, caps: lim.Capabilities(), cfg: cfg, limit: l, limits: cfg.Limits}
	return st, st.plan()
}

// A script that reads no clock runs in real time, several windows long:
// Run says so, with the estimate, before it starts; one on an injected
// clock runs nothing in real time and says nothing.
func TestWarnRealTime(t *testing.T) {
	var out bytes.Buffer
	short, p1 := planFor(t, "expiring-counter.lua", []string{"{window_ms}", "{limit}"}, limit.Limit{Count: 5, Window: time.Second}, &out)
	if len(p1.real) == 0 {
		t.Fatalf("a script without a clock argument planned no real-time trials")
	}
	one := short.realTimeEstimate(p1)
	long, p3 := planFor(t, "expiring-counter.lua", []string{"{window_ms}", "{limit}"}, limit.Limit{Count: 5, Window: 3 * time.Second}, &out)
	three := long.realTimeEstimate(p3)
	if one < RealTimeWarnAfter || three < 2*one || three > 4*one {
		t.Errorf("estimates %v (W=1s) and %v (W=3s): want at least %v, growing with the window", one, three, RealTimeWarnAfter)
	}
	short.warnRealTime(p1)
	if got := out.String(); !strings.Contains(got, "trials run in real time: this takes ~") || !strings.Contains(got, "reads its own clock") {
		t.Errorf("warning: %q", got)
	}
	out.Reset()
	injected, p := planFor(t, "sliding-log.lua", []string{"{now_us}", "{window_us}", "{limit}", "{request_id}"}, limit.Limit{Count: 5, Window: 10 * time.Second}, &out)
	if d := injected.realTimeEstimate(p); d != 0 || len(p.real) != 0 {
		t.Errorf("injected clock: %d real-time trials, estimate %v; want none", len(p.real), d)
	}
	injected.warnRealTime(p)
	if out.Len() != 0 {
		t.Errorf("injected clock: warned %q", out.String())
	}
}
