package vclock_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/vclock"
)

// xcall runs src rewritten by vclock.Rewrite with expiry at virtual time now, on
// key (tracked: its prefix), with companion comp, as ExpiryCall would send
// it (safety 1 h).
func xcall(t *testing.T, src string, withTime bool, now time.Time, key, comp string, args ...any) (any, error) {
	t.Helper()
	x, err := vclock.Rewrite(src, vclock.Options{Time: withTime, Expiry: vclock.ExpiryLean})
	if err != nil {
		t.Fatalf("Rewrite: %v", err)
	}
	if withTime {
		args = append(args, vclock.TimeArg(now))
	}
	args = append(args, key, strconv.FormatInt(now.UnixMilli(), 10), "3600000")
	return srv.Client().Eval(t.Context(), x.Source, []string{key, comp}, args...).Result()
}

func TestVirtualExpiryKeepsLines(t *testing.T) {
	key := srv.Key(t)
	if err := srv.Client().HSet(t.Context(), key, "f", "1").Err(); err != nil {
		t.Fatal(err)
	}
	bodies := []string{
		"local a = 1\nlocal b = redis.call('TIME')\nlocal c = nil + a\nreturn c",
		"local a = 1\nlocal b = redis.call('TIME')\nreturn redis.call('NOPE')",
		"local a = 1\nlocal b = 2\nreturn redis.call('INCR', KEYS[1])",
		"local a = 1\nlocal b = 2\nreturn redis.call('SET', KEYS[1], 'v', 'EXAT', 'soon')",
		"local a = 1\nlocal b = 2\nlocal r = redis.pcall('SET') error(r)",
		"local a = 1\nlocal b = 2\nerror('boom')",
	}
	for _, body := range bodies {
		for _, shebang := range []string{"", "#!lua\n"} {
			for _, withTime := range []bool{false, true} {
				src := shebang + body
				x, err := vclock.Rewrite(src, vclock.Options{Time: withTime, Expiry: vclock.ExpiryLean})
				if err != nil {
					t.Fatal(err)
				}
				if got, want := strings.Count(x.Source, "\n"), strings.Count(src, "\n")+1; got != want {
					t.Errorf("%q: %d newlines, want %d (one more line, at the end)", src, got, want)
				}
				_, want := srv.Client().Eval(t.Context(), src, []string{key}).Result()
				_, got := xcall(t, src, withTime, vt0, key, key+"~vt")
				if want == nil || got == nil {
					t.Fatalf("%q: errors %v and %v, want both", src, want, got)
				}
				w, g := scriptSHA.ReplaceAllString(want.Error(), "script: SHA"), scriptSHA.ReplaceAllString(got.Error(), "script: SHA")
				if w != g {
					t.Errorf("%q (time %v):\n got %s\nwant %s", src, withTime, g, w)
				}
			}
		}
	}
}

// TestVirtualExpiryTTL: keys expire at their virtual deadline as Redis
// expires them (gone once now_ms > deadline), TTL reads count on the
// virtual clock, and between calls every key has a real safety TTL.
// Redis 7.0 does not freeze its clock inside a script, so a TTL set in a
// call may count from a ms after the call's start (late, never early) and
// a PTTL read a ms after the call's start: numbers in ms are compared
// within a ms early and a few late (within1), and a key is checked gone
// 2 ms after its deadline.
func TestVirtualExpiryTTL(t *testing.T) {
	key := srv.Key(t)
	comp := key + "~vt"
	ms := time.Millisecond
	steps := []struct {
		at   time.Duration
		src  string
		want string
	}{
		{0, "return redis.call('SET', KEYS[1], 'x', 'PX', 1000)", "OK"},
		{0, "return redis.call('PTTL', KEYS[1])", "1000"},
		{400 * ms, "return redis.call('PTTL', KEYS[1])", "600"},
		{400 * ms, "return redis.call('TTL', KEYS[1])", "1"},
		{999 * ms, "return redis.call('PTTL', KEYS[1])", "1"},
		{1000 * ms, "return redis.call('EXISTS', KEYS[1])", "1"},
		{1002 * ms, "return redis.call('EXISTS', KEYS[1])", "0"},
		// a TTL longer than the safety TTL (2 days, as a fixed window of a
		// day gives its keys): read back in virtual time, capped between calls
		{1100 * ms, "redis.call('SET', KEYS[1], 'x', 'EX', 172800) return redis.call('TTL', KEYS[1])", "172800"},
		{1500 * ms, "return redis.call('PTTL', KEYS[1])", "172799600"},
		{1500 * ms, "return redis.call('PEXPIRETIME', KEYS[1]) - ARGV[1]", "172799600"},
		{1600 * ms, "return redis.call('DEL', KEYS[1])", "1"},
		// a TTL set only when there is none
		{2000 * ms, "redis.call('INCR', KEYS[1]) if redis.call('TTL', KEYS[1]) == -1 then redis.call('EXPIRE', KEYS[1], 10) end return redis.call('PTTL', KEYS[1])", "10000"},
		{5000 * ms, "redis.call('INCR', KEYS[1]) if redis.call('TTL', KEYS[1]) == -1 then redis.call('EXPIRE', KEYS[1], 10) end return redis.call('PTTL', KEYS[1])", "7000"},
		{12002 * ms, "return redis.call('GET', KEYS[1])", "<nil>"},
		// absolute expiries on the virtual clock
		{20000 * ms, "return redis.call('PEXPIRETIME', KEYS[1])", "-2"},
		{20000 * ms, "redis.call('SET', KEYS[1], 'a', 'PXAT', ARGV[1] + 5000) return redis.call('PEXPIRETIME', KEYS[1]) - ARGV[1]", "5000"},
		{20000 * ms, "return redis.call('EXPIRETIME', KEYS[1]) * 1000 - math.floor(ARGV[1] / 1000) * 1000", "5000"},
		{24000 * ms, "return redis.call('PTTL', KEYS[1])", "1000"},
		{24000 * ms, "return redis.call('EXPIREAT', KEYS[1], math.floor(ARGV[1] / 1000) + 2)", "1"},
		{25500 * ms, "return redis.call('PTTL', KEYS[1])", "500"},
		// KEEPTTL, GETEX, PERSIST behave natively
		{25500 * ms, "redis.call('SET', KEYS[1], 'b', 'KEEPTTL') return redis.call('PTTL', KEYS[1])", "500"},
		{25600 * ms, "redis.call('GETEX', KEYS[1], 'PXAT', ARGV[1] + 100) return redis.call('PTTL', KEYS[1])", "100"},
		{25700 * ms, "return redis.call('GETEX', KEYS[1], 'PERSIST')", "b"},
		{99000 * ms, "return redis.call('TTL', KEYS[1])", "-1"},
		{99000 * ms, "return redis.call('PEXPIRE', KEYS[1], 10)", "1"},
		{99005 * ms, "return redis.call('PERSIST', KEYS[1])", "1"},
		{99005 * ms, "return redis.call('TTL', KEYS[1])", "-1"},
		{999000 * ms, "return redis.call('GET', KEYS[1])", "b"},
		// a dynamic command name goes through the wrapper
		{999000 * ms, "local c = 'pexpireat' redis.call(c, KEYS[1], ARGV[1] + 50) local p = 'pexpiretime' return redis.call(p, KEYS[1]) - ARGV[1]", "50"},
		{999052 * ms, "return redis.call('EXISTS', KEYS[1])", "0"},
		// a TTL of 1 ms ends on time (on a real Redis 7.0 a PEXPIRE 1 can delete at once)
		{1000000 * ms, "return redis.call('SET', KEYS[1], 'c', 'PX', 1)", "OK"},
		{1000001 * ms, "return redis.call('GET', KEYS[1])", "c"},
		{1000003 * ms, "return redis.call('GET', KEYS[1])", "<nil>"},
		{1000003 * ms, "redis.call('SET', KEYS[1], 'd') return redis.call('PEXPIRE', KEYS[1], 1)", "1"},
		{1000004 * ms, "return redis.call('GET', KEYS[1])", "d"},
		{1000006 * ms, "return redis.call('GET', KEYS[1])", "<nil>"},
	}
	for i, s := range steps {
		now := vt0.Add(s.at)
		got, err := xcall(t, s.src, false, now, key, comp, strconv.FormatInt(now.UnixMilli(), 10))
		if !within1(fmt.Sprint(got), s.want) || (err != nil && s.want != "<nil>") {
			t.Fatalf("step %d at %s: %s\n got %v, %v, want %s", i, s.at, s.src, got, err, s.want)
		}
		for _, k := range []string{key, comp} {
			ttl := srv.Client().PTTL(t.Context(), k).Val()
			if ttl == -1*time.Nanosecond || ttl == -1*time.Millisecond {
				t.Fatalf("step %d: %s has no TTL between calls", i, k)
			}
			// capped at the safety TTL (1 h here), however
			// long the virtual one
			if ttl > time.Hour {
				t.Fatalf("step %d: %s has a real TTL of %v between calls, past the safety TTL (1h)", i, k, ttl)
			}
		}
	}
}

// within1 reports got == want, or both integers (ms) where got is at most
// 1 early and at most 5 late: a TTL counts from Redis's clock when the
// call's command ran, which can be a few ms after the call's start on a
// loaded machine (late, never early: 2 ms was seen at load 15), and a
// PTTL read back a ms later may read a ms less (seen once in about 100 runs
// at load 10: 0 for 1). On small figures (a TTL about to end) the key must
// still be there: a figure below 0 (-2, gone; -1, no TTL) is never taken.
func within1(got, want string) bool {
	if got == want {
		return true
	}
	g, err1 := strconv.Atoi(got)
	w, err2 := strconv.Atoi(want)
	if err1 != nil || err2 != nil || g-w > 5 {
		return false
	}
	return w-g <= 1 && (w >= 10 || g >= 0)
}

// ExpiryCall and an ExpiryTag's Rewrite over a call kept from one decision
// to the next send the same call, and a call ExpiryCall rewrote runs on
// Redis as the limiter's own would: the pipelined path reuses its calls,
// the reference rewrites each anew.
func TestExpiryCallEqualsRewrite(t *testing.T) {
	l := limit.Limit{Count: 3, Window: time.Minute}
	lim, err := algorithms.New("sliding-log", srv.Client(), l)
	if err != nil {
		t.Fatal(err)
	}
	s := lim.(algorithms.Scripted)
	key := srv.Key(t) + ":{u}"
	comp := srv.Key(t) + ":{u}:expiry"
	tag := algorithms.NewExpiryTag(key, comp)
	var reused algorithms.ScriptCall
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		now := t0.Add(time.Duration(i) * time.Second)
		c, err := s.Call(key, 1, algorithms.At(now))
		if err != nil {
			t.Fatal(err)
		}
		want, err := algorithms.ExpiryCall(c, key, comp, now, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := tag.Rewrite(&reused, c, now, time.Hour); err != nil {
			t.Fatal(err)
		}
		if want.Script.Hash() != reused.Script.Hash() || fmt.Sprint(want.Keys) != fmt.Sprint(reused.Keys) || fmt.Sprint(want.Args) != fmt.Sprint(reused.Args) {
			t.Fatalf("decision %d: ExpiryCall %v %v, Rewrite %v %v", i, want.Keys, want.Args, reused.Keys, reused.Args)
		}
		v, err := want.Script.Run(t.Context(), srv.Client(), want.Keys, want.Args...).Result()
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.Decode(want, v)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != (i < 3) {
			t.Errorf("decision %d at %s: allowed %v, want %v (limit 3 per minute)", i, now.Format(time.TimeOnly), d.Allowed, i < 3)
		}
	}
}

// A key outside the tracked prefix (a script that builds a key of another
// hash tag) is not emulated, and does not expire on the wall clock during
// the command either: its relative TTL gets the safety TTL added, in the
// lean form and in the full one, and reads back as set (TTL, PTTL). So
// whether it is gone never depends on how long the calls took in real
// time (on a loaded machine a 500 ms TTL ran out between a greedy
// adversary's calls, and a verdict found there did not replay).
func TestVirtualExpiryUntrackedKeyOnSafetyTTL(t *testing.T) {
	key := srv.Key(t)
	comp := key + "~vt"
	other := "untracked:" + key
	t.Cleanup(func() { srv.Client().Del(t.Context(), other) })
	cases := []struct {
		name, src, want string
	}{
		{"lean PEXPIRE", "local k = ARGV[1] redis.call('INCR', k) redis.call('PEXPIRE', k, 100) return 1", "1"},
		{"lean EXPIRE", "local k = ARGV[1] redis.call('INCR', k) redis.call('EXPIRE', k, 1) return 1", "1"},
		{"full SET PX", "local k = ARGV[1] redis.call('SET', k, 'x', 'PX', 100) return redis.call('PTTL', k)", "100"},
		{"full PEXPIRE", "local k = ARGV[1] redis.call('INCR', k) redis.call('PEXPIRE', k, 100) return redis.call('PTTL', k)", "100"},
		{"full EXPIRE", "local k = ARGV[1] redis.call('INCR', k) redis.call('EXPIRE', k, 2) return redis.call('TTL', k)", "2"},
		{"full SETEX", "local k = ARGV[1] redis.call('SETEX', k, 2, 'x') return redis.call('TTL', k)", "2"},
	}
	for _, c := range cases {
		srv.Client().Del(t.Context(), other)
		got, err := xcall(t, c.src, false, vt0, key, comp, other)
		if err != nil || !within1(fmt.Sprint(got), c.want) {
			t.Errorf("%s: got %v, %v; want %s", c.name, got, err, c.want)
		}
		// safety 1 h (xcall's): the real TTL is the script's plus that
		if ttl := srv.Client().PTTL(t.Context(), other).Val(); ttl < time.Hour {
			t.Errorf("%s: %s has a real TTL of %v, want the safety TTL (1h) added", c.name, other, ttl)
		}
	}
}
