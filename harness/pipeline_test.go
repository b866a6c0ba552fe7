package harness_test

import (
	"fmt"
	"regexp"
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
			jrs, err := r.Execute(ctx, []harness.Job{{Limiter: lim, Limit: l, Schedule: sched, Prefix: fmt.Sprintf("%s:%s:%d:", srv.Key(t), name, k)}})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range jrs[0].Outcomes {
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

// sinkRecorder is an OutcomeSink that keeps what it is told.
type sinkRecorder struct {
	anchors []time.Time
	got     []harness.Outcome
	ends    int
}

func (s *sinkRecorder) Anchor(t time.Time)    { s.anchors = append(s.anchors, t) }
func (s *sinkRecorder) Add(o harness.Outcome) { s.got = append(s.got, o) }
func (s *sinkRecorder) End()                  { s.ends++ }

// A job with a Sink (and its arrivals made by Build) is told the outcomes
// it would have returned, in schedule order, one call at a time and
// pipelined, after its anchor, then its end; its result holds no outcomes and no
// arrivals.
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
		lazy := harness.Job{Limiter: lim, Limit: l, Schedule: scenarios.Schedule{Scenario: sched.Scenario, Params: sched.Params},
			Prefix: fmt.Sprintf("%s:%d:sink:", srv.Key(t), depth), Sink: sink, Calls: len(sched.Arrivals),
			Build: func() []scenarios.Arrival { return append([]scenarios.Arrival(nil), sched.Arrivals...) }}
		kept := harness.Job{Limiter: lim, Limit: l, Schedule: sched, Prefix: fmt.Sprintf("%s:%d:kept:", srv.Key(t), depth)}
		jrs, err := r.Execute(ctx, []harness.Job{lazy, kept})
		if err != nil {
			t.Fatal(err)
		}
		if len(jrs[0].Outcomes) != 0 || len(jrs[0].Job.Schedule.Arrivals) != 0 {
			t.Errorf("depth %d: the sink's job kept %d outcomes, %d arrivals", depth, len(jrs[0].Outcomes), len(jrs[0].Job.Schedule.Arrivals))
		}
		if len(sink.anchors) != 1 || !sink.anchors[0].Equal(jrs[0].Anchor) || sink.ends != 1 {
			t.Errorf("depth %d: anchors told %v, want [%v]; ended %d times, want once", depth, sink.anchors, jrs[0].Anchor, sink.ends)
		}
		want := jrs[1].Outcomes
		if len(sink.got) != len(want) || len(want) != len(sched.Arrivals) {
			t.Fatalf("depth %d: %d outcomes told, %d returned, %d arrivals", depth, len(sink.got), len(want), len(sched.Arrivals))
		}
		for i, o := range sink.got {
			w := want[i]
			if o.Err != nil || o.Seq != i || o.Arrival != w.Arrival || o.Decision.Allowed != w.Decision.Allowed || !o.Decision.DecidedAt.Equal(w.Decision.DecidedAt) {
				t.Fatalf("depth %d: outcome %d told %+v, returned %+v", depth, i, o, w)
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
		jrs, err := r.Execute(ctx, []harness.Job{{Limiter: lim, Schedule: sched, Prefix: prefix}})
		bound := 10*time.Minute + 2*time.Since(start) + 2*w
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range jrs[0].Outcomes {
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
	if _, err := r.Execute(ctx, []harness.Job{{Limiter: lim, Schedule: scenarios.Schedule{Scenario: "days", Params: scenarios.Params{Limit: 5, Window: l.Window}, Arrivals: arr}, Prefix: prefix}}); err != nil {
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
// its round trips (sent by Observe, which runs between them): the calls
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
				if flush {
					r.Observe = func(_ int, o harness.Outcome) {
						if o.Seq%16 == 15 && srv.Client().ScriptFlush(ctx).Err() == nil {
							flushes++
						}
					}
				}
				jrs, err := r.Execute(ctx, []harness.Job{{Limiter: lim, Limit: l, Schedule: sched, Prefix: fmt.Sprintf("%s:%s:%d:", srv.Key(t), name, k)}})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range jrs[0].Outcomes {
					if o.Err != nil {
						t.Fatalf("%s expiry %v flush %v: %v", name, expiry, flush, o.Err)
					}
					got[k] = append(got[k], o.Decision.Allowed)
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
			jrs, err := r.Execute(ctx, []harness.Job{{Limiter: lim, Limit: l, Schedule: sched, Prefix: prefix}})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range jrs[0].Outcomes {
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
			if _, err := r.Execute(ctx, []harness.Job{{Limiter: lim, Limit: l, Schedule: sched, Prefix: prefix + "again:"}}); err != nil {
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

// A job with a Stream is sent the stream's arrivals, pipelined, without
// building them (its Build is not called): told to its Sink or returned,
// the outcomes, anchor included, are those of the same job built. A job
// the run thins, or one run without a pipeline, is built (Build once).
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
	for _, c := range []struct {
		name          string
		depth         int
		expiry, sink  bool
		thin          bool
		wantBuilds    int
		wantStreaming bool
	}{
		{name: "sink", depth: 7, sink: true, wantStreaming: true},
		{name: "returned", depth: 7, wantStreaming: true},
		{name: "expiry", expiry: true, sink: true, wantStreaming: true},
		{name: "thinned", depth: 7, sink: true, thin: true, wantBuilds: 1},
		{name: "one at a time", sink: true, wantBuilds: 1},
	} {
		builds, reads := 0, 0
		sink := &sinkRecorder{}
		streamed := harness.Job{Limiter: lim, Limit: l, Schedule: scenarios.Schedule{Scenario: sched.Scenario, Params: sched.Params},
			Prefix: fmt.Sprintf("%s:%s:streamed:", srv.Key(t), c.name), Calls: len(sched.Arrivals), Thin: c.thin,
			Build: func() []scenarios.Arrival { builds++; return append([]scenarios.Arrival(nil), sched.Arrivals...) },
			Stream: func(yield func(scenarios.Arrival) bool) {
				for _, a := range sched.Arrivals {
					reads++
					if !yield(a) {
						return
					}
				}
			}}
		if c.sink {
			streamed.Sink = sink
		}
		kept := harness.Job{Limiter: lim, Limit: l, Schedule: sched, Prefix: fmt.Sprintf("%s:%s:kept:", srv.Key(t), c.name)}
		r := &harness.Runner{Redis: srv.Client(), Clock: harness.VirtualClock, Pipeline: c.depth, Expiry: c.expiry, Parallel: 2}
		jrs, err := r.Execute(ctx, []harness.Job{streamed, kept})
		if err != nil {
			t.Fatal(err)
		}
		if builds != c.wantBuilds || (reads > 0) != c.wantStreaming {
			t.Errorf("%s: built %d times (want %d), %d arrivals streamed (want some: %v)", c.name, builds, c.wantBuilds, reads, c.wantStreaming)
		}
		if !jrs[0].Anchor.Equal(jrs[1].Anchor) || len(jrs[0].Job.Schedule.Arrivals) != 0 {
			t.Errorf("%s: anchor %v, want %v; %d arrivals kept", c.name, jrs[0].Anchor, jrs[1].Anchor, len(jrs[0].Job.Schedule.Arrivals))
		}
		got, want := jrs[0].Outcomes, jrs[1].Outcomes
		if c.sink {
			got = sink.got
			if len(jrs[0].Outcomes) != 0 || len(sink.anchors) != 1 || !sink.anchors[0].Equal(jrs[0].Anchor) || sink.ends != 1 {
				t.Errorf("%s: %d outcomes returned, anchors told %v, ended %d times", c.name, len(jrs[0].Outcomes), sink.anchors, sink.ends)
			}
		}
		if c.thin {
			continue // fewer sent (at most): TestThinBursts
		}
		if len(got) != len(want) || len(want) != len(sched.Arrivals) {
			t.Fatalf("%s: %d outcomes, %d of the built job, %d arrivals", c.name, len(got), len(want), len(sched.Arrivals))
		}
		for i, o := range got {
			w := want[i]
			if o.Err != nil || o.Seq != i || o.Arrival != w.Arrival || o.Decision.Allowed != w.Decision.Allowed || !o.Decision.DecidedAt.Equal(w.Decision.DecidedAt) {
				t.Fatalf("%s: outcome %d %+v, built %+v", c.name, i, o, w)
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
	if _, err := kept.Execute(ctx, []harness.Job{{Limiter: lim, Limit: l, Schedule: sched, Prefix: base + "control:"}}); err != nil {
		t.Fatal(err)
	}
	before := count(base)
	if before < 2 || count(base+"control:~vt{") == 0 {
		t.Fatalf("%d keys under %s after a run without DropKeys, want its two keys and their companions", before, base)
	}
	dropping := &harness.Runner{Redis: srv.Client(), Clock: harness.VirtualClock, Expiry: true, DropKeys: []string{"a", "b"}}
	jrs, err := dropping.Execute(ctx, []harness.Job{{Limiter: lim, Limit: l, Schedule: sched, Prefix: base}})
	if err != nil || len(jrs[0].Outcomes) != 2 || !jrs[0].Outcomes[0].Decision.Allowed {
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
