package vclock_test

import (
	"crypto/sha1"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/vclock"
)

// leanTaken reports whether src, rewritten with ExpiryLean, runs in the
// lean form, as seen on Redis: one call on fresh keys, after which the
// full form's companion holds its placeholder field "" (made to read
// Redis's clock from its TTL, before the body runs) and the lean one's
// never does.
func leanTaken(t *testing.T, src string, args ...any) bool {
	t.Helper()
	sd := newSide(t, "lean", vclock.Options{Expiry: vclock.ExpiryLean})
	sd.eval(t, src, vt0, args...) // the reply does not matter: an error too leaves the companion
	has, err := srv.Client().HExists(t.Context(), sd.companion, "").Result()
	if err != nil {
		t.Fatal(err)
	}
	return !has
}

// TestVirtualExpiryLeanForm: which scripts take the lean form.
func TestVirtualExpiryLeanForm(t *testing.T) {
	for _, name := range algorithms.Names() {
		src := builtinSource(t, name)
		if src == "" {
			continue
		}
		if !leanTaken(t, src, "1", "2", "3", "4") {
			t.Errorf("%s: full form, want the lean one (its commands never look at a TTL)", name)
		}
	}
	cases := []struct {
		src  string
		lean bool
	}{
		{"redis.call('INCR', KEYS[1]) return redis.call('PEXPIRE', KEYS[1], ARGV[1])", true},
		{"redis.call('INCR', KEYS[1]) return redis.call('PEXPIRE', KEYS[1], math.ceil(ARGV[1] / 1000))", true},
		{"redis.call('INCR', KEYS[1]) return redis.call('PEXPIRE', KEYS[1], ARGV[1] * 2)", true},
		{"local t = redis.call('TIME') return redis.call('GET', KEYS[1])", true},
		{"return redis.status_reply(redis.call('GET', KEYS[1]) or 'none')", true},
		// TTL-sensitive: read, options, KEEPTTL, TTL carried
		{"return redis.call('PTTL', KEYS[1])", false},
		{"return redis.call('PEXPIRE', KEYS[1], ARGV[1], 'NX')", false},
		{"return redis.call('PEXPIRE', KEYS[1], unpack(ARGV))", false},
		{"return redis.call('PEXPIRE', KEYS[1], f(ARGV[1]))", false},
		{"return redis.call('PEXPIRE', KEYS[1], ...)", false},
		{"return redis.call('SET', KEYS[1], 'v', 'KEEPTTL')", false},
		{"return redis.call('RENAME', KEYS[1], KEYS[1] .. 'x')", false},
		{"return redis.call('PERSIST', KEYS[1])", false},
		{"return redis.call('PEXPIREAT', KEYS[1], ARGV[1])", false},
		// calls the rewrite cannot see the command of
		{"local c = 'GET' return redis.call(c, KEYS[1])", false},
		{"local r = redis return r.call('GET', KEYS[1])", false},
		{"return redis.call'PING'", false},
	}
	for _, c := range cases {
		if got := leanTaken(t, c.src, "1000"); got != c.lean {
			t.Errorf("%q: lean %v, want %v", c.src, got, c.lean)
		}
	}
}

// builtinSource is the source of the script of the built-in algorithm
// name: its .lua file, checked against the SHA1 its calls name. "" for an
// algorithm whose script is built otherwise (GCRA's, rewritten for virtual
// time already).
func builtinSource(t *testing.T, name string) string {
	t.Helper()
	lim, err := algorithms.New(name, srv.Client(), limit.Limit{Count: 3, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	c, err := lim.(algorithms.Scripted).Call("k", 1, algorithms.At(vt0))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("..", "algorithms", strings.ReplaceAll(name, "-", "_")+".lua"))
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	if sum := fmt.Sprintf("%x", sha1.Sum(b)); sum != c.Script.Hash() {
		t.Fatalf("%s: its .lua file has SHA1 %s, its calls name %s", name, sum, c.Script.Hash())
	}
	return string(b)
}

// side is one option of the rewrite run on keys of its own.
type side struct {
	name       string
	o          vclock.Options
	base       string // the tracked prefix: every key is base + a suffix
	companion  string
	safety     time.Duration
	srcScripts map[string]vclock.Script
}

func newSide(t *testing.T, name string, o vclock.Options) *side {
	b := srv.Key(t)
	return &side{name: name, o: o, base: b + "{u}", companion: b + "~vt{u}", safety: time.Hour, srcScripts: map[string]vclock.Script{}}
}

// eval runs src, rewritten with the side's options, at virtual time now
// with KEYS[1] = base: args, the time with Options.Time, then the expiry
// call's arguments.
func (s *side) eval(t *testing.T, src string, now time.Time, args ...any) (any, error) {
	t.Helper()
	x, ok := s.srcScripts[src]
	if !ok {
		var err error
		if x, err = vclock.Rewrite(src, s.o); err != nil {
			t.Fatal(err)
		}
		s.srcScripts[src] = x
	}
	if s.o.Time {
		args = append(args, vclock.TimeArg(now))
	}
	args = append(args, s.base, strconv.FormatInt(now.UnixMilli(), 10), strconv.FormatInt(s.safety.Milliseconds(), 10))
	return srv.Client().Eval(t.Context(), x.Source, []string{s.base, s.companion}, args...).Result()
}

// state is what a side's keys look like: each key's suffix (after base)
// with its virtual deadline ("none", a number of ms, "-" when untracked),
// and the suffixes of the keys that exist.
func (s *side) state(t *testing.T) (deadlines map[string]string, exist []string) {
	t.Helper()
	ctx := t.Context()
	h, err := srv.Client().HGetAll(ctx, s.companion).Result()
	if err != nil {
		t.Fatal(err)
	}
	deadlines = map[string]string{}
	for k, v := range h {
		if k != "" {
			deadlines[strings.TrimPrefix(k, s.base)] = v
		}
	}
	// the placeholder field "" is the full form's alone
	if _, has := h[""]; has != (s.o.Expiry == vclock.ExpiryFull) && len(h) > 0 {
		t.Errorf("%s: the companion's placeholder field: %v, want %v", s.name, has, s.o.Expiry == vclock.ExpiryFull)
	}
	keys, err := srv.Client().Keys(ctx, s.base+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		exist = append(exist, strings.TrimPrefix(k, s.base))
		ttl := srv.Client().PTTL(ctx, k).Val()
		if ttl <= 0 || ttl > s.safety {
			t.Errorf("%s: key %s has a real TTL of %v between calls, want in (0, %v]", s.name, k, ttl, s.safety)
		}
	}
	slices.Sort(exist)
	return deadlines, exist
}

// expiryOptions are the key-expiry options of Rewrite that the table
// tests run, each on a side of its own: the scripts they run all take the
// lean form under ExpiryLean.
var expiryOptions = []struct {
	name string
	o    vclock.Options
}{
	{"lean", vclock.Options{Expiry: vclock.ExpiryLean}},
	{"full", vclock.Options{Expiry: vclock.ExpiryFull}},
	{"lean+time", vclock.Options{Time: true, Expiry: vclock.ExpiryLean}},
	{"full+time", vclock.Options{Time: true, Expiry: vclock.ExpiryFull}},
}

// checkState fails unless s's state is want: deadlines given as ms after
// vt0 ("none": no deadline), the existing keys as suffixes. The full form
// counts a TTL the body sets from Redis's cached clock, so its deadlines
// may be later by the time that clock moved during the call (a few ms),
// never earlier; the lean form's are exact.
func checkState(t *testing.T, step string, s *side, want map[string]string, exist []string) {
	t.Helper()
	d, e := s.state(t)
	if fmt.Sprint(e) != fmt.Sprint(exist) {
		t.Errorf("%s: %s: keys %q, want %q", step, s.name, e, exist)
	}
	if len(d) != len(want) {
		t.Errorf("%s: %s: deadlines %v, want %v", step, s.name, d, want)
	}
	for k, w := range want {
		g, ok := d[k]
		if !ok {
			t.Errorf("%s: %s: key %q untracked, want deadline %s", step, s.name, k, w)
			continue
		}
		if g == w {
			continue
		}
		gi, err1 := strconv.ParseInt(g, 10, 64)
		wi, err2 := strconv.ParseInt(w, 10, 64)
		late := gi - vt0.UnixMilli() - wi
		if err1 == nil && err2 == nil && (late == 0 || s.o.Expiry == vclock.ExpiryFull && late > 0 && late <= 5) {
			continue
		}
		t.Errorf("%s: %s: key %q: deadline %s (vt0 + %d ms), want vt0 + %s ms", step, s.name, k, g, gi-vt0.UnixMilli(), w)
	}
}

// TestVirtualExpiryForms: for each expiry option, a table of scripts run in
// turn on one tracked key, each with the reply it gives and the keys and
// virtual deadlines it leaves: keys that expire, vanish behind ratelab's
// back, are made again without a TTL, or are given a TTL that removes
// them.
func TestVirtualExpiryForms(t *testing.T) {
	steps := exprSteps()
	want := []struct {
		reply     string
		deadlines map[string]string // suffix -> ms after vt0, or "none"
		exist     []string
	}{
		{"1 <nil>", map[string]string{"": "1000"}, []string{""}},
		{"1<nil>", map[string]string{"": "1000"}, []string{""}},
		{"2<nil>", map[string]string{"": "2900"}, []string{""}},
		{"2<nil>", map[string]string{"": "2900"}, []string{""}},
		{"<nil>redis: nil", map[string]string{}, nil},
		{"1 <nil>", map[string]string{"": "none"}, []string{""}},
		{"2 <nil>", map[string]string{"": "none"}, []string{""}},
		{"1 <nil>", map[string]string{"": "8000"}, []string{""}},
		{"table<nil>", map[string]string{"": "8000"}, []string{""}},
		{"1 <nil>", map[string]string{}, nil},
		{"1 <nil>", map[string]string{}, nil},
		{"1 <nil>", map[string]string{"": "19000"}, []string{""}},
		{"1 <nil>", map[string]string{"": "none"}, []string{""}},
		{"1 <nil>", map[string]string{"": "21000"}, []string{""}},
		{"<nil>redis: nil", map[string]string{}, nil},
		{"1 <nil>", map[string]string{"": "none"}, []string{""}},
		{"1 <nil>", map[string]string{"": "none", ":z": "none"}, []string{"", ":z"}},
		{"1 <nil>", map[string]string{"": "65000", ":b": "16000", ":z": "none"}, []string{"", ":b", ":z"}},
		{"2<nil>", map[string]string{"": "65000", ":z": "none"}, []string{"", ":z"}},
		// a TTL past 1e15 ms is sent as is, not shifted by the safety TTL
		// (1 h): read back, its deadline is 17 s + 2e15 ms - 1 h
		{"1 <nil>", map[string]string{"": "1999999996417000", ":z": "none"}, []string{"", ":z"}},
		{"3<nil>", map[string]string{"": "1999999996417000", ":z": "none"}, []string{"", ":z"}},
		{"4 <nil>", map[string]string{"": "19200", ":z": "none"}, []string{"", ":z"}},
		{"nil:nil:a<nil>", map[string]string{"": "19200", ":z": "none"}, []string{"", ":z"}},
		{"b:nil:a<nil>", map[string]string{"": "none", ":z": "none"}, []string{"", ":z"}},
	}
	if len(want) != len(steps) {
		t.Fatalf("%d steps, %d expectations", len(steps), len(want))
	}
	for _, opt := range expiryOptions {
		t.Run(opt.name, func(t *testing.T) {
			sd := newSide(t, opt.name, opt.o)
			for i, st := range steps {
				if st.delete {
					srv.Client().Del(t.Context(), sd.base)
				}
				r, err := sd.eval(t, st.src, vt0.Add(st.at), st.args...)
				step := fmt.Sprintf("step %d at %v: %s", i, st.at, st.src)
				if got := scriptSHA.ReplaceAllString(fmt.Sprint(r, err), "script: SHA"); got != want[i].reply {
					t.Errorf("%s: replied %s, want %s", step, got, want[i].reply)
				}
				checkState(t, step, sd, want[i].deadlines, want[i].exist)
			}
		})
	}
}

// TestVirtualExpiryAlgorithms: for each expiry option, every built-in
// algorithm decides through the rewritten script exactly as its own script
// does at the same virtual times (bursts, gaps shorter and longer than the
// window: keys that expire on the virtual clock never change a verdict),
// and no key it leaves has a real TTL past the safety TTL.
func TestVirtualExpiryAlgorithms(t *testing.T) {
	l := limit.Limit{Count: 3, Window: 10 * time.Second}
	var at []time.Duration
	for _, burst := range []time.Duration{0, 4 * time.Second, 9 * time.Second, 30 * time.Second, 31 * time.Second, 75 * time.Second} {
		for k := range 4 {
			at = append(at, burst+time.Duration(k)*700*time.Millisecond)
		}
	}
	for _, name := range algorithms.Names() {
		for _, opt := range expiryOptions {
			t.Run(name+"/"+opt.name, func(t *testing.T) {
				src := builtinSource(t, name)
				if src == "" {
					t.Skip("no .lua file: a script built otherwise")
				}
				lim, err := algorithms.New(name, srv.Client(), l)
				if err != nil {
					t.Fatal(err)
				}
				s := lim.(algorithms.Scripted)
				sd := newSide(t, opt.name, opt.o)
				own := srv.Key(t) + ":own{u}"
				for i, d := range at {
					now := vt0.Add(d)
					want, err := lim.Allow(t.Context(), own, 1, algorithms.At(now))
					if err != nil {
						t.Fatal(err)
					}
					c, err := s.Call(sd.base, 1, algorithms.At(now))
					if err != nil {
						t.Fatal(err)
					}
					r, err := sd.eval(t, src, now, c.Args...)
					if err != nil {
						t.Fatalf("decision %d: %v", i, err)
					}
					got, err := s.Decode(c, r)
					if err != nil || got.Allowed != want.Allowed || got.Remaining != want.Remaining || got.RetryAfter != want.RetryAfter {
						t.Errorf("decision %d at %v: %+v, %v; own script %+v", i, d, got, err, want)
					}
					sd.state(t)
				}
			})
		}
	}
}

// TestVirtualExpiryLeanTime: in the lean form with virtual time, TIME
// answers the virtual time (the site answers itself: no shadowed redis).
func TestVirtualExpiryLeanTime(t *testing.T) {
	src := "local t = redis.call('TIME') redis.call('INCR', KEYS[1]) redis.call('PEXPIRE', KEYS[1], 1000) return t[1] .. ':' .. t[2]"
	if !leanTaken(t, src, "1000") {
		t.Fatalf("%q: full form, want the lean one", src)
	}
	key := srv.Key(t)
	now := vt0.Add(1234567 * time.Microsecond)
	got, err := xcall(t, src, true, now, key, key+"~vt")
	if want := fmt.Sprintf("%d:%d", now.Unix(), now.Nanosecond()/1000); err != nil || got != want {
		t.Fatalf("got %v, %v, want %s", got, err, want)
	}
	if ttl := srv.Client().PTTL(t.Context(), key).Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("real TTL %v between calls, want in (0, 1h]", ttl)
	}
}

// TestVirtualExpiryVararg: a body's "..." (the chunk's: empty in Redis)
// and the name arg read as they do in the script alone, in every option. The
// body's function is vararg only when the body uses "...": a vararg
// function that does not makes a local table arg at every call (Lua 5.1),
// which a script alone does not see (reading the global arg is an error).
func TestVirtualExpiryVararg(t *testing.T) {
	scripts := []string{
		"redis.call('INCR', KEYS[1]) return select('#', ...)",
		"redis.call('INCR', KEYS[1]) local a = {...} return #a",
		"redis.call('INCR', KEYS[1]) return type(arg)",
	}
	for _, src := range scripts {
		plain, perr := srv.Client().Eval(t.Context(), src, []string{srv.Key(t) + "{p}"}).Result()
		want := scriptSHA.ReplaceAllString(fmt.Sprint(plain, perr), "script: SHA")
		for _, opt := range expiryOptions {
			sd := newSide(t, opt.name, opt.o)
			r, err := sd.eval(t, src, vt0)
			got := scriptSHA.ReplaceAllString(fmt.Sprint(r, err), "script: SHA")
			// an error names the line and the script's SHA, which differ
			if (perr != nil) != (err != nil) || perr == nil && got != want {
				t.Errorf("%s, %s: %s, alone %s", src, sd.name, got, want)
			}
		}
	}
}

// exprStep is one call of the expiry table: src at vt0 + at with args,
// the tracked key deleted behind ratelab's back first when delete is set.
type exprStep struct {
	at     time.Duration
	src    string
	args   []any
	delete bool
}

func exprSteps() []exprStep {
	const (
		incrExpire  = "redis.call('INCR', KEYS[1]) return redis.call('PEXPIRE', KEYS[1], ARGV[1])"
		incrExpireS = "redis.call('INCR', KEYS[1]) return redis.call('EXPIRE', KEYS[1], ARGV[1])"
		expireGet   = "redis.call('INCR', KEYS[1]) redis.call('PEXPIRE', KEYS[1], ARGV[1]) return redis.call('GET', KEYS[1])"
		incr        = "return redis.call('INCR', KEYS[1])"
		get         = "return redis.call('GET', KEYS[1])"
		delIncr     = "redis.call('DEL', KEYS[1]) return redis.call('INCR', KEYS[1])"
		remake      = "local z = KEYS[1] .. ':z' redis.call('ZADD', z, 1, 'a') redis.call('PEXPIRE', z, ARGV[1]) redis.call('ZREM', z, 'a') return redis.call('ZADD', z, 2, 'b')"
		badExpire   = "redis.call('INCR', KEYS[1]) local r = redis.pcall('PEXPIRE', KEYS[1], 'soon') return type(r)"
		twoKeys     = "local b = KEYS[1] .. ':b' redis.call('INCR', KEYS[1]) redis.call('INCR', b) redis.call('PEXPIRE', b, ARGV[1]) return redis.call('PEXPIRE', KEYS[1], ARGV[2])"
		hugeExpire  = "redis.call('INCR', KEYS[1]) return redis.call('PEXPIRE', KEYS[1], '2000000000000000')"
		// reads past the keys and arguments it was given: nil, as without
		// ExpiryCall's (taken off then)
		pastArgs = "redis.call('INCR', KEYS[1]) return tostring(ARGV[2]) .. ':' .. tostring(KEYS[2]) .. ':' .. ARGV[1]"
	)
	s := time.Second
	return []exprStep{
		{0, incrExpire, []any{"1000"}, false},
		{500 * time.Millisecond, get, nil, false},
		{900 * time.Millisecond, expireGet, []any{"2000"}, false},
		{2900 * time.Millisecond, get, nil, false},
		// gone: past its deadline; 50 ms past it, as the full form counts a
		// TTL from Redis's cached clock, late by the time its call took (1 ms
		// at 2,901 ms once on a loaded machine: the replies differed)
		{2950 * time.Millisecond, get, nil, false},
		{3 * s, incr, nil, false}, // made without a TTL
		{4 * s, incr, nil, false},
		{5 * s, incrExpireS, []any{"3"}, false},
		{6 * s, badExpire, nil, false},             // its deadline kept
		{7 * s, incrExpire, []any{"0"}, false},     // removed by its PEXPIRE
		{8 * s, incrExpire, []any{"-5"}, false},    // made, then removed
		{9 * s, incrExpire, []any{"10000"}, false}, // made with a deadline
		{10 * s, incr, nil, true},                  // gone behind its back, made again without a TTL
		{11 * s, incrExpire, []any{"10000"}, false},
		{12 * s, get, nil, true}, // gone behind its back
		{13 * s, delIncr, nil, false},
		{14 * s, remake, []any{"5000"}, false}, // its TTL lost when emptied
		{15 * s, twoKeys, []any{"1000", "50000"}, false},
		{16500 * time.Millisecond, get, nil, false}, // the second key gone
		{17 * s, hugeExpire, nil, false},
		{18 * s, get, nil, false},
		// a call inside another's arguments: both rewritten
		{18500 * time.Millisecond, "return redis.call('INCRBY', KEYS[1], redis.call('PEXPIRE', KEYS[1], ARGV[1]))", []any{"700"}, false},
		{19 * s, pastArgs, []any{"a"}, false},
		{20 * s, pastArgs, []any{"a", "b"}, false},
	}
}

// TestVirtualExpiryOptionsDiffer: where the two expiry options differ on
// purpose (see lean.go), each one's behaviour on Redis: the companion made
// only when it has something to hold (lean) or on the first call (full, to
// read Redis's clock from); keys left as they were by a body that raises
// an error (lean) or made persistent before the body (full: a key without
// deadline); a key without deadline made persistent behind ratelab's back
// and not touched kept tracked with the safety TTL back (lean) or dropped
// (full).
func TestVirtualExpiryOptionsDiffer(t *testing.T) {
	const (
		get    = "return redis.call('GET', KEYS[1])"
		incr   = "return redis.call('INCR', KEYS[1])"
		incrZ  = "redis.call('INCR', KEYS[1] .. ':z') return redis.call('INCR', KEYS[1])"
		raises = "redis.call('INCR', KEYS[1]) error('raised')"
	)
	for _, opt := range expiryOptions {
		lean := opt.o.Expiry == vclock.ExpiryLean
		t.Run(opt.name, func(t *testing.T) {
			rdb := srv.Client()
			// nothing to hold: a companion in the full form only
			sd := newSide(t, opt.name, opt.o)
			if _, err := sd.eval(t, get, vt0); err == nil || err.Error() != "redis: nil" {
				t.Fatalf("GET on no key: %v, want redis: nil", err)
			}
			if got, want := rdb.Exists(t.Context(), sd.companion).Val() == 1, !lean; got != want {
				t.Errorf("companion after a call that left no key: exists %v, want %v", got, want)
			}

			// an error in the body, on a key without deadline
			sd = newSide(t, opt.name, opt.o)
			if _, err := sd.eval(t, incr, vt0); err != nil {
				t.Fatal(err)
			}
			if _, err := sd.eval(t, raises, vt0.Add(time.Second)); err == nil || !strings.Contains(err.Error(), "raised") {
				t.Fatalf("raising body: %v, want its error", err)
			}
			ttl := rdb.PTTL(t.Context(), sd.base).Val()
			switch {
			case lean && (ttl <= 0 || ttl > sd.safety):
				t.Errorf("lean: key after a body that raised: real TTL %v, want the safety TTL", ttl)
			case !lean && ttl != -1:
				t.Errorf("full: key after a body that raised: real TTL %v, want none (-1)", ttl)
			}
			if v := rdb.Get(t.Context(), sd.base).Val(); v != "2" {
				t.Errorf("key after a body that raised: %q, want 2 (its INCR ran)", v)
			}

			// a key without deadline, made persistent behind ratelab's
			// back, then not touched
			sd = newSide(t, opt.name, opt.o)
			if _, err := sd.eval(t, incrZ, vt0); err != nil {
				t.Fatal(err)
			}
			z := sd.base + ":z"
			if err := rdb.Persist(t.Context(), z).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := sd.eval(t, incr, vt0.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			d, err := rdb.HGet(t.Context(), sd.companion, z).Result()
			ttl = rdb.PTTL(t.Context(), z).Val()
			switch {
			case lean && (err != nil || d != "none" || ttl <= 0 || ttl > sd.safety):
				t.Errorf("lean: untouched persistent key: deadline %q (%v), real TTL %v; want none, the safety TTL", d, err, ttl)
			case !lean && (err == nil || ttl != -1):
				t.Errorf("full: untouched persistent key: deadline %q, real TTL %v; want untracked, -1", d, ttl)
			}
		})
	}
}
