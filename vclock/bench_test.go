package vclock_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/limit"
)

// benchRun numbers the benchmark runs, for keys of their own.
var benchRun atomic.Int64

// BenchmarkExpiryRedisCPU measures what key expiry on the virtual clock
// costs Redis: the server's CPU per decision (INFO cpu's used_cpu_user +
// used_cpu_sys, before and after) of (a) the limiter's own script and (b)
// the same calls rewritten by an ExpiryTag, as the harness sends them in
// virtual time (companion "<prefix>~vt{key}", safety TTL 10 min + the
// window). Both run pipelined (ScriptPipe, 256 calls per round trip) on
// keys of their own in steady state: a limit of 10,000 per 24 h, 16 keys
// each decided every 86.4 s of virtual time, so a sliding log holds ~1,000
// entries, and every decision is allowed. The two alternate batch by batch,
// each timed by an INFO cpu around its round trip, so a change in the
// machine's load falls on both alike. Reports plain-µs/decision,
// expiry-µs/decision and their ratio x (expiry over plain); ns/op is the
// wall time of one decision of each.
//
//	go test -run '^$' -bench ExpiryRedisCPU -benchtime 20000x ./vclock/
func BenchmarkExpiryRedisCPU(b *testing.B) {
	const (
		batch   = 256
		keys    = 16
		entries = 1000 // per key: decisions a key gets in one window
	)
	l := limit.Limit{Count: 10_000, Window: 24 * time.Hour}
	safety := 10*time.Minute + l.Window
	dt := l.Window / (entries * keys) // virtual time between two decisions
	for _, name := range []string{"sliding-log", "fixed-window", "reservoir"} {
		b.Run(name, func(b *testing.B) {
			lim, err := algorithms.New(name, srv.Client(), l)
			if err != nil {
				b.Fatal(err)
			}
			s := lim.(algorithms.Scripted)
			type variant struct {
				expiry bool
				keys   []string
				tags   []algorithms.ExpiryTag
				pipe   *algorithms.ScriptPipe
				calls  []algorithms.ScriptCall
				cpu    float64 // server CPU seconds over the timed batches
				n      int     // decisions made
			}
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			vs := []*variant{{expiry: false}, {expiry: true}}
			for _, v := range vs {
				prefix := fmt.Sprintf("bench:%d:", benchRun.Add(1))
				for k := range keys {
					key := fmt.Sprintf("%s{%d}", prefix, k)
					v.keys = append(v.keys, key)
					v.tags = append(v.tags, algorithms.NewExpiryTag(key, prefix+"~vt{"+key+"}"))
				}
				v.pipe = algorithms.NewScriptPipe(srv.Client())
			}
			// run sends decisions [from, from+count) of v in one round trip
			run := func(v *variant, from, count int) {
				v.calls = v.calls[:0]
				for i := from; i < from+count; i++ {
					k, now := i%keys, t0.Add(time.Duration(i)*dt)
					c, err := s.Call(v.keys[k], 1, algorithms.At(now))
					if err != nil {
						b.Fatal(err)
					}
					if v.expiry {
						var x algorithms.ScriptCall
						if err := v.tags[k].Rewrite(&x, c, now, safety); err != nil {
							b.Fatal(err)
						}
						c = x
					}
					v.calls = append(v.calls, c)
				}
				cmds, err := v.pipe.Exec(ctx, v.calls)
				if err != nil {
					b.Fatal(err)
				}
				for i, cmd := range cmds {
					d, err := s.Decode(v.calls[i], cmd.Val())
					if err != nil {
						b.Fatal(err)
					}
					if !d.Allowed {
						b.Fatalf("decision %d denied: the steady state allows every one", from+i)
					}
				}
			}
			// fill: one window of decisions per key, untimed
			warm := entries * keys
			for from := 0; from < warm; from += batch {
				for _, v := range vs {
					run(v, from, batch)
				}
			}
			b.ResetTimer()
			for from := warm; from < warm+b.N; from += batch {
				count := min(batch, warm+b.N-from)
				for _, v := range vs {
					before := serverCPU(b)
					run(v, from, count)
					v.cpu += serverCPU(b) - before
					v.n += count
				}
			}
			b.StopTimer()
			plain, expiry := vs[0].cpu*1e6/float64(vs[0].n), vs[1].cpu*1e6/float64(vs[1].n)
			b.ReportMetric(plain, "plain-µs/decision")
			b.ReportMetric(expiry, "expiry-µs/decision")
			b.ReportMetric(expiry/plain, "x")
		})
	}
}

// serverCPU is the server's CPU seconds so far, user + sys (INFO cpu).
func serverCPU(b *testing.B) float64 {
	b.Helper()
	info, err := srv.Client().Info(ctx, "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var cpu float64
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("INFO cpu: %s: %v", line, err)
			}
			cpu += f
		}
	}
	return cpu
}
