package vclock_test

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/vclock"
)

// libName returns a library name unique to the test (letters, digits, _).
func libName(t *testing.T) string {
	return "t_" + strings.Trim(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "_"), "_")
}

// loadLib rewrites src as o asks, under a name and function prefix unique
// to the test, FUNCTION LOADs it and deletes it when the test ends.
func loadLib(t *testing.T, src string, o vclock.Options) vclock.Library {
	t.Helper()
	o.Library, o.FunctionPrefix = libName(t), libName(t)+"_"
	lib, err := vclock.RewriteLibrary(src, o)
	if err != nil {
		t.Fatalf("RewriteLibrary: %v", err)
	}
	if got, want := strings.Count(lib.Source, "\n"), strings.Count(src, "\n"); got != want {
		t.Fatalf("%d newlines, want the source's %d", got, want)
	}
	if err := srv.Client().FunctionLoad(t.Context(), lib.Source).Err(); err != nil {
		t.Fatalf("FUNCTION LOAD: %v\n%s", err, lib.Source)
	}
	t.Cleanup(func() { _ = srv.Client().FunctionDelete(ctx, lib.Name).Err() })
	return lib
}

// fcallAt calls function name of lib at virtual time now (TIME rewrite).
func fcallAt(t *testing.T, lib vclock.Library, name string, now time.Time, keys []string, args ...any) (any, error) {
	t.Helper()
	return srv.Client().FCall(t.Context(), lib.Function(name), keys, lib.Args(now, args...)...).Result()
}

const timeLib = `#!lua name=clock
local function now(keys, args)
  local t = redis.call('TIME')
  return {t[1], t[2], #keys, #args, args[#args] or ''}
end
redis.register_function('now', now)
redis.register_function{function_name = 'dyn', callback = function(keys, args) local c = 'TIME'; local t = redis.call(c); return {t[1], t[2], redis.call('SET', keys[1], 'v')} end}
local v = redis.REDIS_VERSION; redis.log(redis.LOG_DEBUG, 'loaded ' .. v)
`

func TestLibraryTime(t *testing.T) {
	t.Parallel()
	lib := loadLib(t, timeLib, vclock.Options{Time: true})
	if want := []string{"now", "dyn"}; !slices.Equal(lib.Functions, want) {
		t.Errorf("Functions: got %v, want %v", lib.Functions, want)
	}
	if lib.TimeCalls != 1 || lib.DynamicCalls != 1 {
		t.Errorf("TimeCalls %d, DynamicCalls %d: want 1 and 1", lib.TimeCalls, lib.DynamicCalls)
	}
	key := srv.Key(t)
	for i, tc := range []struct {
		fn   string
		keys []string
		args []any
		want string
	}{
		// keys and args as the callback's caller sent them, the time popped
		{"now", []string{key}, []any{"a", "b"}, fmt.Sprint(append(timePair(vt0), int64(1), int64(2), "b"))},
		{"now", nil, nil, fmt.Sprint(append(timePair(vt0.Add(time.Second)), int64(0), int64(0), ""))},
		// a command that is not a literal answers the virtual time too
		{"dyn", []string{key}, nil, fmt.Sprint(append(timePair(vt0.Add(2*time.Second)), "OK"))},
	} {
		got, err := fcallAt(t, lib, tc.fn, vt0.Add(time.Duration(i)*time.Second), tc.keys, tc.args...)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if fmt.Sprint(got) != tc.want {
			t.Errorf("step %d: %s: got %v, want %s", i, tc.fn, got, tc.want)
		}
	}
	// only the renamed library and functions are there
	for _, n := range []string{"now", "dyn"} {
		if err := srv.Client().FCall(t.Context(), n, nil).Err(); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("FCALL %s (the original name): %v, want not found", n, err)
		}
	}
}

// fixedLib is a fixed window from the key's first hit: INCR, EXPIRE on the
// first; over the limit (ARGV[1]) answers 0.
const fixedLib = `#!lua name=fixed
redis.register_function{function_name = 'hit', flags = {'no-writes'}, callback = function(keys, args)
  local n = redis.call('INCR', keys[1])
  if n == 1 then redis.call('EXPIRE', keys[1], args[2]) end
  if n > tonumber(args[1]) then return 0 end
  return 1
end}
`

func TestLibraryExpiry(t *testing.T) {
	t.Parallel()
	// the no-writes flag is dropped: the emulation writes
	for _, form := range []vclock.Expiry{vclock.ExpiryLean, vclock.ExpiryFull} {
		t.Run(strconv.Itoa(int(form)), func(t *testing.T) {
			t.Parallel()
			src := fixedLib
			if form == vclock.ExpiryFull {
				src += "redis.register_function('ttl', function(keys, args) return redis.call('PTTL', keys[1]) end)\n"
			}
			lib := loadLib(t, src, vclock.Options{Expiry: form})
			key := srv.Key(t)
			prefix := key[:strings.LastIndexByte(key, ':')+1]
			comp := vclock.CompanionKey(prefix, "t")
			call := func(fn string, at time.Duration) (any, error) {
				now := vt0.Add(at)
				return srv.Client().FCall(t.Context(), lib.Function(fn), []string{key, comp}, "2", "60", prefix, now.UnixMilli(), 3600000).Result()
			}
			for i, step := range []struct {
				at         time.Duration
				lean, full int64 // the answers of each form; -1: not asked (the full form's deadline may be a ms late)
			}{
				{0, 1, 1}, {time.Second, 1, 1}, {59 * time.Second, 0, 0},
				// expired on the virtual clock once past 60 s
				{60 * time.Second, 0, -1}, {60*time.Second + time.Millisecond, 1, -1},
				{61 * time.Second, 1, 1}, {62 * time.Second, 0, 1}, {63 * time.Second, 0, 0},
			} {
				want := step.lean
				if form == vclock.ExpiryFull {
					want = step.full
				}
				if want < 0 {
					continue
				}
				got, err := call("hit", step.at)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if got != want {
					t.Errorf("step %d at %v: got %v, want %d", i, step.at, got, want)
				}
			}
			if form == vclock.ExpiryFull {
				// a TTL read in the function is the virtual one, not the
				// real one (about an hour): the full form counts a TTL
				// from Redis's cached clock and reads it against the live
				// one, each a ms or so off when the clock moves in a call
				got, err := call("ttl", 70*time.Second)
				if n, ok := got.(int64); err != nil || !ok || n < 50_000 || n > 52_000 {
					t.Errorf("PTTL at 70 s: got %v, %v, want 51000 within a few ms, not the real TTL", got, err)
				}
			}
		})
	}
}

func TestLibraryErrorLines(t *testing.T) {
	t.Parallel()
	src := "#!lua name=errs\n" +
		"local function boom(keys, args)\n" +
		"  local x = 1\n" +
		"  if args[1] == 'lua' then return nil + x end\n" +
		"  return redis.call('NOPE')\n" +
		"end\n" +
		"redis.register_function('boom', boom)\n"
	orig := strings.Replace(src, "name=errs", "name="+libName(t)+"_orig", 1)
	orig = strings.Replace(orig, "'boom', boom", "'"+libName(t)+"_orig_boom', boom", 1)
	if err := srv.Client().FunctionLoad(t.Context(), orig).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Client().FunctionDelete(ctx, libName(t)+"_orig").Err() })
	for _, o := range []vclock.Options{{Time: true}, {Expiry: vclock.ExpiryLean}, {Time: true, Expiry: vclock.ExpiryFull}} {
		lib := loadLib(t, src, o)
		for _, arg := range []string{"lua", "command"} {
			_, want := srv.Client().FCall(t.Context(), libName(t)+"_orig_boom", nil, arg).Result()
			args := []any{arg}
			keys := []string(nil)
			if o.Time {
				args = lib.Args(vt0, args...)
			}
			if o.Expiry != vclock.NoExpiry {
				keys = []string{"x~vt{x}"}
				args = append(args, "x", vt0.UnixMilli(), 3600000)
			}
			_, got := srv.Client().FCall(t.Context(), lib.Function("boom"), keys, args...).Result()
			if want == nil || got == nil {
				t.Fatalf("%+v %s: errors %v and %v, want both", o, arg, want, got)
			}
			if w, g := want.Error(), strings.Replace(got.Error(), lib.Function("boom"), libName(t)+"_orig_boom", 1); w != g {
				t.Errorf("%+v %s: got %q, want %q", o, arg, g, w)
			}
		}
		if err := srv.Client().FunctionDelete(t.Context(), lib.Name).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLibraryFunctions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		src   string
		name  string
		funcs []string
		err   error
	}{
		{"#!lua name=a\nredis.register_function('f', function() return 1 end)", "a", []string{"f"}, nil},
		{"#!lua name=b\nredis.register_function{function_name='g', callback=cb, flags={'no-writes'}}\nredis.register_function(\"f\", cb)", "b", []string{"g", "f"}, nil},
		{"#!lua name=c\nredis.register_function({callback = cb, function_name = [[h]]})\nredis.register_function('h', cb)", "c", []string{"h"}, nil},
		// a name built at run time is not listed; comments are not code
		{"#!lua name=d\nlocal n = 'x'\nredis.register_function(n, cb) -- redis.register_function('y', cb)", "d", nil, nil},
		{"local x = 1", "", nil, vclock.ErrNotLibrary},
		{"#!lua flags=no-writes\nreturn 1", "", nil, vclock.ErrNotLibrary},
	} {
		name, funcs, err := vclock.LibraryFunctions(tc.src)
		if !errors.Is(err, tc.err) || name != tc.name || !slices.Equal(funcs, tc.funcs) {
			t.Errorf("%q: got %q %v %v, want %q %v %v", tc.src, name, funcs, err, tc.name, tc.funcs, tc.err)
		}
		if vclock.IsLibrary(tc.src) != (tc.err == nil) {
			t.Errorf("%q: IsLibrary %v", tc.src, !(tc.err == nil))
		}
	}
}

func TestLibraryNames(t *testing.T) {
	t.Parallel()
	src := "#!lua name=orig\nredis.register_function('f', function() return 1 end)\n"
	lib, err := vclock.RewriteLibrary(src, vclock.Options{Time: true, Library: "ratelab_x_orig", FunctionPrefix: "ratelab_x_"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(lib.Source, "#!lua name=ratelab_x_orig\n") || lib.Name != "ratelab_x_orig" || lib.Function("f") != "ratelab_x_f" {
		t.Errorf("got name %q, function %q, first line %q", lib.Name, lib.Function("f"), lib.Source[:strings.IndexByte(lib.Source, '\n')])
	}
	// renamed only: Redis's own TIME, no extra arg
	ren, err := vclock.RenameLibrary(timeLib, libName(t), libName(t)+"_")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Client().FunctionLoad(t.Context(), ren.Source).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Client().FunctionDelete(ctx, ren.Name).Err() })
	got, err := srv.Client().FCall(t.Context(), ren.Function("now"), nil, "a").Result()
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := got.([]any); !ok || len(a) != 5 || a[3] != int64(1) || a[0] == timePair(vt0)[0] {
		t.Errorf("renamed library: got %v, want the real time and one arg", got)
	}
	for _, o := range []vclock.Options{{Library: "a-b"}, {FunctionPrefix: "x'"}} {
		if _, err := vclock.RewriteLibrary(src, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if _, err := vclock.Rewrite(src, vclock.Options{}); !errors.Is(err, vclock.ErrFunctionLibrary) {
		t.Errorf("Rewrite of a library: %v, want ErrFunctionLibrary", err)
	}
}

// The deadline table's form (ExpiryTable), as an endpoint that receives a
// FUNCTION LOAD rewrites it: the deadline hash and the written-keys set
// taken off the keys, the time off the args, TIME virtual, commands
// through the translation.
func TestLibraryTable(t *testing.T) {
	t.Parallel()
	lib := loadLib(t, timeLib, vclock.Options{Expiry: vclock.ExpiryTable})
	key := srv.Key(t)
	got, err := srv.Client().FCall(t.Context(), lib.Function("now"), []string{key, key + ":D", key + ":W"}, "a", vclock.TimeArg(vt0)).Result()
	if want := fmt.Sprint(append(timePair(vt0), int64(1), int64(1), "a")); err != nil || fmt.Sprint(got) != want {
		t.Errorf("now: got %v, %v; want %s", got, err, want)
	}
	got, err = srv.Client().FCall(t.Context(), lib.Function("dyn"), []string{key, key + ":D", key + ":W"}, vclock.TimeArg(vt0)).Result()
	if want := fmt.Sprint(append(timePair(vt0), "OK")); err != nil || fmt.Sprint(got) != want {
		t.Errorf("dyn: got %v, %v; want %s", got, err, want)
	}
}
