package harness_test

import (
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/scenarios"
)

// Pipelined virtual time decides exactly as one call at a time: the same
// answers, in schedule order, for every built-in algorithm.
func TestPipelineSameDecisions(t *testing.T) {
	l := limit.Limit{Count: 20, Window: time.Second}
	sc, err := scenarios.Get("overload")
	if err != nil {
		t.Fatal(err)
	}
	sched := sc.Build(scenarios.Params{Limit: l.Count, Window: l.Window, Seed: 3})
	for _, name := range algorithms.Names() {
		lim, err := algorithms.New(name, srv.Client(), l)
		if err != nil {
			t.Fatal(err)
		}
		var got [2][]bool
		for k, depth := range []int{0, 64} {
			r := &harness.Runner{Redis: srv.Client(), Clock: harness.VirtualClock, Pipeline: depth}
			_, outs, err := execute(r, harness.Job{Limiter: lim, Limit: l, Prefix: fmt.Sprintf("%s:%s:%d:", srv.Key(t), name, k)}.WithSchedule(sched))
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range outs[0] {
				if o.Err != nil {
					t.Fatalf("%s depth %d: %v", name, depth, o.Err)
				}
				got[k] = append(got[k], o.Decision.Allowed)
			}
		}
		if fmt.Sprint(got[0]) != fmt.Sprint(got[1]) || len(got[0]) != len(sched.Arrivals) {
			t.Errorf("%s: pipelined decisions differ from one at a time", name)
		}
	}
}

// sinkRecorder is a Sink that keeps what it is told.
type sinkRecorder struct {
	anchors []time.Time
	got     []harness.Outcome
	ends    int
}

func (s *sinkRecorder) Anchor(t time.Time) { s.anchors = append(s.anchors, t) }
func (s *sinkRecorder) End()               { s.ends++ }
func (s *sinkRecorder) Add(o harness.Outcome) error {
	s.got = append(s.got, o)
	return nil
}

// once is arrivals as a sequence that may be ranged over once: a second
// range is a test error.
func once(t *testing.T, arrivals []scenarios.Arrival) iter.Seq[scenarios.Arrival] {
	ranged := false
	return func(yield func(scenarios.Arrival) bool) {
		if ranged {
			t.Error("the arrivals were ranged over twice")
			return
		}
		ranged = true
		for _, a := range arrivals {
			if !yield(a) {
				return
			}
		}
	}
}

// A job's arrivals are read once (a sequence that can be ranged over once
// will do), one call at a time and pipelined, and its Sink is told the
// outcomes in the arrivals' order, after its anchor, then its end: the
// same as a Collector is told of the same schedule.
func TestSinkSameOutcomes(t *testing.T) {
	l := limit.Limit{Count: 20, Window: time.Second}
	sc, err := scenarios.Get("overload")
	if err != nil {
		t.Fatal(err)
	}
	sched := sc.Build(scenarios.Params{Limit: l.Count, Window: l.Window, Seed: 3})
	lim, err := algorithms.New("sliding-log", srv.Client(), l)
	if err != nil {
		t.Fatal(err)
	}
	for _, depth := range []int{0, 7} {
		r := &harness.Runner{Redis: srv.Client(), Clock: harness.VirtualClock, Pipeline: depth, Parallel: 2}
		sink := &sinkRecorder{}
		lazy := harness.Job{Limiter: lim, Limit: l, Scenario: sched.Scenario, Prefix: fmt.Sprintf("%s:%d:sink:", srv.Key(t), depth),
			Arrivals: once(t, sched.Arrivals), Calls: len(sched.Arrivals), Sink: sink}
		var kept harness.Collector
		jrs, err := r.Execute(ctx, []harness.Job{lazy,
			harness.Job{Limiter: lim, Limit: l, Prefix: fmt.Sprintf("%s:%d:kept:", srv.Key(t), depth), Sink: &kept}.WithSchedule(sched)})
		if err != nil {
			t.Fatal(err)
		}
		if len(sink.anchors) != 1 || !sink.anchors[0].Equal(jrs[0].Anchor) || sink.ends != 1 {
			t.Errorf("depth %d: anchors told %v, want [%v]; ended %d times, want once", depth, sink.anchors, jrs[0].Anchor, sink.ends)
		}
		want := kept.Outcomes
		if len(sink.got) != len(want) || len(want) != len(sched.Arrivals) {
			t.Fatalf("depth %d: %d outcomes told, %d collected, %d arrivals", depth, len(sink.got), len(want), len(sched.Arrivals))
		}
		for i, o := range sink.got {
			w := want[i]
			if o.Err != nil || o.Seq != i || o.Arrival != w.Arrival || o.Decision.Allowed != w.Decision.Allowed || !o.Decision.DecidedAt.Equal(w.Decision.DecidedAt) {
				t.Fatalf("depth %d: outcome %d told %+v, collected %+v", depth, i, o, w)
			}
		}
	}
}

// A script with a TTL of half the window forgets in virtual time what it
// would forget in real time, at Redis's boundary (a key lives while now_ms
// <= its expiry; at most a ms late, never early); with a full-window TTL it
// forgets nothing early; keys without a TTL never expire. Between calls
// every key keeps a real safety TTL (nothing without an end),
// bounded by 10 minutes + twice the run + the window + its virtual
// remainder (here at most the window).
func TestExpiryVirtual(t *testing.T) {
	const src = `redis.call('INCR', KEYS[1])
if ARGV[2] ~= '0' then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return {1, 0, 0, tonumber(ARGV[1])}`
	w := time.Hour
	for _, c := range []struct {
		ttl  string
		gap  time.Duration
		want int64 // the counter at the second call
	}{
		{"1800000", w/2 - time.Millisecond, 2},
		{"1800000", w / 2, 2}, // now_ms == expiry: still there
		// gone: 2 ms past, not 1 — a PEXPIRE counts from Redis's live
		// clock, which may tick between the call's start and the PEXPIRE
		// (Redis 7.0 does not freeze it in a script): a ms late, never early
		{"1800000", w/2 + 2*time.Millisecond, 1},
		{"3600000", w - time.Millisecond, 2},
		{"0", 100 * w, 2}, // no TTL: never expires
	} {
		lim, err := custom.NewScriptLimiter(srv.Client(), "ttl.lua", src, []string{"{now_us}", c.ttl}, 1, limit.Limit{Count: 10, Window: w})
		if err != nil {
			t.Fatal(err)
		}
		prefix := fmt.Sprintf("%s:%s:%s:", srv.Key(t), c.ttl, c.gap)
		sched := scenarios.Schedule{Scenario: "ttl", Params: scenarios.Params{Limit: 10, Window: w},
			Arrivals: []scenarios.Arrival{{At: 0, Key: "k", Cost: 1}, {At: c.gap, Key: "k", Cost: 1}}}
		r := &harness.Runner{Redis: srv.Client(), Clock: harness.VirtualClock, Expiry: true, Pipeline: 8}
		start := time.Now()
		_, outs, err := execute(r, harness.Job{Limiter: lim, Limit: limit.Limit{Count: 10, Window: w}, Prefix: prefix}.WithSchedule(sched))
		bound := 10*time.Minute + 2*time.Since(start) + 2*w
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs[0] {
			if o.Err != nil {
				t.Fatal(o.Err)
			}
		}
		n, err := srv.Client().Get(ctx, prefix+"{k}").Int64()
		if err != nil || n != c.want {
			t.Errorf("ttl %s, gap %s: counter %d (%v), want %d", c.ttl, c.gap, n, err, c.want)
		}
		for _, k := range []string{prefix + "{k}", prefix + "~vt{k}"} {
			if ttl := srv.Client().PTTL(ctx, k).Val(); ttl <= 0 || ttl > bound {
				t.Errorf("ttl %s: %s has a real TTL of %s after the run; want one in (0, %s]", c.ttl, k, ttl, bound)
			}
		}
	}
}

// Keys a script writes besides its KEYS (fixed-window's per-window
// counters) expire on the virtual clock too.
func TestExpiryOtherKeys(t *testing.T) {
	l := limit.Limit{Count: 5, Window: 24 * time.Hour}
	lim, err := algorithms.New("fixed-window", srv.Client(), l)
	if err != nil {
		t.Fatal(err)
	}
	var arr []scenarios.Arrival
	for d := 0; d < 5; d++ {
		arr = append(arr, scenarios.Arrival{At: time.Duration(d) * l.Window, Key: "k", Cost: 1})
	}
	prefix := srv.Key(t) + ":"
	r := &harness.Runner{Redis: srv.Client(), Clock: harness.VirtualClock, Expiry: true}
	if _, err := r.Execute(ctx, []harness.Job{{Limiter: lim, Limit: limit.Limit{Count: 5, Window: l.Window}, Scenario: "days", Arrivals: slices.Values(arr), Prefix: prefix}}); err != nil {
		t.Fatal(err)
	}
	keys, err := srv.Client().Keys(ctx, prefix+"{k}*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) > 2 {
		t.Errorf("%d per-window keys left after 5 virtual days: %v; want the expired ones removed", len(keys), keys)
	}
}

// pipelined virtual time survives SCRIPT FLUSH between
// its round trips (sent by the job's Sink, told between them): the calls
// refused with NOSCRIPT are loaded and resent, with and without the expiry
// emulation, and the run decides as without flushes.
func TestPipelineScriptFlush(t *testing.T) {
	l := limit.Limit{Count: 20, Window: time.Second}
	sc, err := scenarios.Get("overload")
	if err != nil {
		t.Fatal(err)
	}
	sched := sc.Build(scenarios.Params{Limit: l.Count, Window: l.Window, Seed: 3})
	for _, expiry := range []bool{false, true} {
		for _, name := range []string{"sliding-log", "fixed-window"} {
			lim, err := algorithms.New(name, srv.Client(), l)
			if err != nil {
				t.Fatal(err)
			}
			var got [2][]bool
			flushes := 0
			for k, flush := range []bool{false, true} {
				r := &harness.Runner{Redis: srv.Client(), Clock: harness.VirtualClock, Pipeline: 16, Expiry: expiry}
				job := harness.Job{Limiter: lim, Limit: l, Prefix: fmt.Sprintf("%s:%s:%d:", srv.Key(t), name, k)}.WithSchedule(sched)
				job.Sink = harness.SinkFunc(func(o harness.Outcome) error {
					if o.Err != nil {
						t.Errorf("%s expiry %v flush %v: %v", name, expiry, flush, o.Err)
					}
					got[k] = append(got[k], o.Decision.Allowed)
					if flush && o.Seq%16 == 15 && srv.Client().ScriptFlush(ctx).Err() == nil {
						flushes++
					}
					return nil
				})
				if _, err := r.Execute(ctx, []harness.Job{job}); err != nil {
					t.Fatal(err)
				}
			}
			if flushes < 10 {
				t.Fatalf("%s: only %d SCRIPT FLUSH", name, flushes)
			}
			if fmt.Sprint(got[0]) != fmt.Sprint(got[1]) || len(got[0]) != len(sched.Arrivals) {
				t.Errorf("%s expiry %v: decisions with SCRIPT FLUSH differ from those without", name, expiry)
			}
		}
	}
}

// with Expiry, a decision is one script call (EVALSHA):
// no MULTI, no SCAN, no second script; and it decides as without Expiry
// when no key expires.
func TestExpiryOneScriptPerDecision(t *testing.T) {
	l := limit.Limit{Count: 20, Window: time.Hour}
	sc, err := scenarios.Get("overload")
	if err != nil {
		t.Fatal(err)
	}
	sched := sc.Build(scenarios.Params{Limit: l.Count, Window: l.Window, Seed: 5})
	for _, name := range []string{"sliding-log", "fixed-window"} {
		lim, err := algorithms.New(name, srv.Client(), l)
		if err != nil {
			t.Fatal(err)
		}
		var got [2][]bool
		for k, expiry := range []bool{false, true} {
			r := &harness.Runner{Redis: srv.Client(), Clock: harness.VirtualClock, Pipeline: 64, Expiry: expiry}
			prefix := fmt.Sprintf("%s:%s:%v:", srv.Key(t), name, expiry)
			_, outs, err := execute(r, harness.Job{Limiter: lim, Limit: l, Prefix: prefix}.WithSchedule(sched))
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range outs[0] {
				if o.Err != nil {
					t.Fatal(o.Err)
				}
				got[k] = append(got[k], o.Decision.Allowed)
			}
			if !expiry {
				continue
			}
			// a second run of the same job, counted
			if err := srv.Client().ConfigResetStat(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Execute(ctx, []harness.Job{harness.Job{Limiter: lim, Limit: l, Prefix: prefix + "again:"}.WithSchedule(sched)}); err != nil {
				t.Fatal(err)
			}
			stats := srv.Client().Info(ctx, "commandstats").Val()
			for _, cmd := range []string{"multi", "exec", "scan", "eval"} {
				if strings.Contains(stats, "cmdstat_"+cmd+":") {
					t.Errorf("%s: %s sent with Expiry", name, cmd)
				}
			}
			m := regexp.MustCompile(`cmdstat_evalsha:calls=(\d+)`).FindStringSubmatch(stats)
			if m == nil || m[1] != fmt.Sprint(len(sched.Arrivals)) {
				t.Errorf("%s: EVALSHA calls %v, want %d (one per decision)", name, m, len(sched.Arrivals))
			}
		}
		if fmt.Sprint(got[0]) != fmt.Sprint(got[1]) {
			t.Errorf("%s: decisions with Expiry differ from those without", name)
		}
	}
}

// A pipelined virtual-time run reads a job's arrivals as its round trips
// go: when its Sink is told an outcome, at most a round trip's arrivals
// past it were read (thinned: a round trip's and the longest burst's). A
// job run without a pipeline has its arrivals read whole first. Either way the anchor (the first
// arrival is before it) and the outcomes are those of the same schedule
// given as a slice.
func TestStreamSameOutcomes(t *testing.T) {
	l := limit.Limit{Count: 20, Window: time.Second}
	sc, err := scenarios.Get("overload")
	if err != nil {
		t.Fatal(err)
	}
	sched := sc.Build(scenarios.Params{Limit: l.Count, Window: l.Window, Seed: 5})
	for i := range sched.Arrivals {
		sched.Arrivals[i].At -= l.Window / 2 // the first before the anchor: the anchor moves a window on
	}
	lim, err := algorithms.New("sliding-log", srv.Client(), l)
	if err != nil {
		t.Fatal(err)
	}
	burst, longest := 1, 1 // the longest run of arrivals thinning may take for one burst
	for i := 1; i < len(sched.Arrivals); i++ {
		a, b := sched.Arrivals[i-1], sched.Arrivals[i]
		if b.At-a.At <= harness.ThinStep && a.Key == b.Key && a.Cost == b.Cost {
			burst++
		} else {
			burst = 1
		}
		longest = max(longest, burst)
	}
	for _, c := range []struct {
		name      string
		depth     int
		expiry    bool
		thin      bool
		wantAhead int // the most arrivals read past the one told; -1: all read first
	}{
		{name: "pipelined", depth: 7, wantAhead: 7},
		{name: "expiry", expiry: true, wantAhead: 1},
		{name: "thinned", depth: 7, thin: true, wantAhead: 7 + longest},
		{name: "one at a time", wantAhead: -1},
	} {
		reads, ahead := 0, 0
		var got []harness.Outcome
		streamed := harness.Job{Limiter: lim, Limit: l, Scenario: sched.Scenario, Prefix: fmt.Sprintf("%s:%s:streamed:", srv.Key(t), c.name),
			Calls: len(sched.Arrivals), Thin: c.thin,
			Arrivals: func(yield func(scenarios.Arrival) bool) {
				for _, a := range sched.Arrivals {
					reads++
					if !yield(a) {
						return
					}
				}
			},
			Sink: harness.SinkFunc(func(o harness.Outcome) error {
				ahead = max(ahead, reads-o.Seq-1)
				got = append(got, o)
				return nil
			})}
		var kept harness.Collector
		r := &harness.Runner{Redis: srv.Client(), Clock: harness.VirtualClock, Pipeline: c.depth, Expiry: c.expiry, Parallel: 2}
		jrs, err := r.Execute(ctx, []harness.Job{streamed,
			harness.Job{Limiter: lim, Limit: l, Prefix: fmt.Sprintf("%s:%s:kept:", srv.Key(t), c.name), Sink: &kept}.WithSchedule(sched)})
		if err != nil {
			t.Fatal(err)
		}
		if want := c.wantAhead; want < 0 && (len(got) == 0 || ahead != len(sched.Arrivals)-1) || want >= 0 && ahead > want {
			t.Errorf("%s: %d arrivals read past an outcome told, want at most %d (-1: all read first)", c.name, ahead, want)
		}
		if !jrs[0].Anchor.Equal(jrs[1].Anchor) {
			t.Errorf("%s: anchor %v, want %v", c.name, jrs[0].Anchor, jrs[1].Anchor)
		}
		if c.thin {
			continue // fewer sent (at most): TestThinBursts
		}
		want := kept.Outcomes
		if len(got) != len(want) || len(want) != len(sched.Arrivals) {
			t.Fatalf("%s: %d outcomes, %d of the slice, %d arrivals", c.name, len(got), len(want), len(sched.Arrivals))
		}
		for i, o := range got {
			w := want[i]
			if o.Err != nil || o.Seq != i || o.Arrival != w.Arrival || o.Decision.Allowed != w.Decision.Allowed || !o.Decision.DecidedAt.Equal(w.Decision.DecidedAt) {
				t.Fatalf("%s: outcome %d %+v, of the slice %+v", c.name, i, o, w)
			}
		}
	}
}

// With DropKeys a virtual job's keys (its limiter's and the expiry
// emulation's) are gone once it is over; without, they stay; keys under a
// longer prefix (an isolation control's) are not the job's.
func TestDropKeys(t *testing.T) {
	l := limit.Limit{Count: 5, Window: time.Second}
	lim, err := algorithms.New("sliding-log", srv.Client(), l)
	if err != nil {
		t.Fatal(err)
	}
	sched := scenarios.Schedule{Scenario: "s", Params: scenarios.Params{Limit: l.Count, Window: l.Window},
		Arrivals: []scenarios.Arrival{{At: 0, Key: "a", Cost: 1}, {At: 1, Key: "b", Cost: 1}}}
	base := srv.Key(t) + ":"
	count := func(prefix string) int {
		t.Helper()
		keys, err := server.ScanKeys(ctx, srv.Client(), prefix)
		if err != nil {
			t.Fatal(err)
		}
		return len(keys)
	}
	kept := &harness.Runner{Redis: srv.Client(), Clock: harness.VirtualClock, Expiry: true}
	if _, err := kept.Execute(ctx, []harness.Job{harness.Job{Limiter: lim, Limit: l, Prefix: base + "control:"}.WithSchedule(sched)}); err != nil {
		t.Fatal(err)
	}
	before := count(base)
	if before < 2 || count(base+"control:~vt{") == 0 {
		t.Fatalf("%d keys under %s after a run without DropKeys, want its two keys and their companions", before, base)
	}
	dropping := &harness.Runner{Redis: srv.Client(), Clock: harness.VirtualClock, Expiry: true, DropKeys: []string{"a", "b"}}
	jrs, outs, err := execute(dropping, harness.Job{Limiter: lim, Limit: l, Prefix: base}.WithSchedule(sched))
	if err != nil || len(outs[0]) != 2 || !outs[0][0].Decision.Allowed {
		t.Fatalf("run: %v, %+v", err, jrs)
	}
	if n := count(base + "{"); n != 0 {
		t.Errorf("%d keys of the job left", n)
	}
	if n := count(base + "~vt{"); n != 0 {
		t.Errorf("%d companions of the job left", n)
	}
	if n := count(base + "control:"); n != before {
		t.Errorf("%d keys under the longer prefix, want the %d it had", n, before)
	}
}
