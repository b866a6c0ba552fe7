package scenarios

import (
	"testing"
	"time"
)

// The probing client's trials: one per family where it applies, each
// program's last burst where the probe says, and the exploit of a
// first-hit window never more than L in that window, 2L-1 within one
// window after it.
func TestProbeTrials(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name     string
		limit    int64
		window   time.Duration
		families []string
	}{
		{"60 per minute", 60, time.Minute, []string{CautiousFamily, GreedyFamily}},
		{"10 per hour", 10, time.Hour, []string{CautiousFamily, GreedyFamily}},
		// the weighted probe's two bursts do not fit in the window
		{"60 per 110ms", 60, 110 * ms, []string{CautiousFamily}},
		{"limit 1: no L-1 to keep", 1, time.Minute, nil},
		{"above AdaptiveMaxLimit", AdaptiveMaxLimit + 1, time.Minute, nil},
		{"below AdaptiveMinWindow", 10, AdaptiveMinWindow - ms, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			trials := ProbeTrials(Params{Limit: c.limit, Window: c.window}, ms)
			if len(trials) != len(c.families) {
				t.Fatalf("%d trials, want %d", len(trials), len(c.families))
			}
			for i, tr := range trials {
				p := tr.Probe
				if tr.Family != c.families[i] || p == nil || !tr.Adaptive() || tr.MaxCalls() != p.Calls() {
					t.Fatalf("trial %d: family %s, probe %v, adaptive %v, max calls %d", i, tr.Family, p, tr.Adaptive(), tr.MaxCalls())
				}
				for _, x := range []time.Duration{p.Lo + ms, (p.Lo + p.Hi) / 2, p.Hi} {
					prog := p.Learn(x)
					last := prog.Bursts[len(prog.Bursts)-1]
					if !prog.Cautious || last.At != x || last.N != c.limit || end(prog.Bursts[len(prog.Bursts)-2]) >= x {
						t.Errorf("trial %d: Learn(%s) = %s: want it cautious, its last burst of L at x, after the others", i, x, prog)
					}
				}
				if tr.Family == GreedyFamily {
					// the fill and the whole burst at Hi: 2L within W less a step
					prog := p.Learn(p.Hi)
					if span := end(prog.Bursts[1]) - prog.Bursts[0].At; span >= c.window-ms || prog.Bursts[0].N != c.limit {
						t.Errorf("Learn(Hi) = %s spans %s: want L and L within %s", prog, span, c.window-ms)
					}
				}
				if tr.Family == CautiousFamily {
					lo, hi := c.window-c.window/512, c.window
					prog := p.Exploit(lo, hi)
					b := prog.Bursts
					if n := b[0].N + b[1].N; n != c.limit || end(b[1]) != lo || b[2].At < hi+time.Duration(c.limit-1)*ms || b[2].N != c.limit {
						t.Errorf("Exploit(%s, %s) = %s: want 1 + L-1 ending at lo, L from hi plus a burst", lo, hi, prog)
					}
					// three bursts of L at 1 ms fit in a window of a second or more
					if span := end(b[2]) - b[1].At; c.window >= time.Second && span >= c.window {
						t.Errorf("Exploit spans %s: want 2L-1 within the window", span)
					}
				}
			}
		})
	}
}

// end is the instant of a burst's last request.
func end(b Burst) time.Duration { return b.At + time.Duration(max(b.N-1, 0))*b.Step }
