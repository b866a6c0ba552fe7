package algorithms

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ratelab/ratelab/vclock"
	"github.com/redis/go-redis/v9"
)

// virtualNowKey is the context key of WithVirtualNow.
type virtualNowKey struct{}

// WithVirtualNow returns a copy of ctx that carries the virtual time now,
// for the calls of a VirtualTimeScripter made with it.
func WithVirtualNow(ctx context.Context, now time.Time) context.Context {
	return context.WithValue(ctx, virtualNowKey{}, now)
}

// VirtualNow returns the virtual time ctx carries (WithVirtualNow), if any.
func VirtualNow(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(virtualNowKey{}).(time.Time)
	return t, ok
}

// ErrNoVirtualNow is returned (wrapped) by a VirtualTimeScripter's script
// calls when their context carries no virtual time (WithVirtualNow).
var ErrNoVirtualNow = errors.New("virtual time: the context carries no time (WithVirtualNow)")

// VirtualTimeScripter runs every script it is given on virtual time: it is a
// redis.Scripter (and go-redis/redis_rate's unexported "rediser": the same
// methods plus Del) that rewrites each script with vclock.Rewrite and
// appends the context's virtual time (WithVirtualNow) as the last ARGV.
// Callers keep using the original script and its SHA1; the scripter maps
// them to the rewritten script's:
//
//   - EvalSha(original SHA1) runs EVALSHA of the rewritten script once the
//     scripter has seen the original's source (Eval or ScriptLoad); before
//     that it answers NOSCRIPT, so go-redis's Script.Run falls back to Eval
//     with the source, which the scripter rewrites and remembers.
//   - A NOSCRIPT from the server (SCRIPT FLUSH, failover) is answered by one
//     EVAL of the rewritten source.
//   - ScriptLoad loads the rewritten script and answers the original SHA1;
//     ScriptExists asks about the rewritten scripts.
//
// Safe for concurrent use. The zero value is not usable: NewVirtualTimeScripter.
type VirtualTimeScripter struct {
	next redis.Scripter

	mu      sync.Mutex
	scripts map[string]*vtEntry // by the original's SHA1
}

type vtEntry struct {
	vt  vclock.Script
	sha string // the rewritten script's SHA1
}

var _ redis.Scripter = (*VirtualTimeScripter)(nil)

// NewVirtualTimeScripter returns a VirtualTimeScripter sending to next (a
// Client, Ring, ClusterClient, or another Scripter such as a key-rewriting
// wrapper).
func NewVirtualTimeScripter(next redis.Scripter) *VirtualTimeScripter {
	return &VirtualTimeScripter{next: next, scripts: map[string]*vtEntry{}}
}

func sha1Hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// learn rewrites src once and returns its entry.
func (v *VirtualTimeScripter) learn(src string) (*vtEntry, error) {
	sha := sha1Hex(src)
	v.mu.Lock()
	defer v.mu.Unlock()
	if e, ok := v.scripts[sha]; ok {
		return e, nil
	}
	vt, err := vclock.Rewrite(src, vclock.Options{Time: true})
	if err != nil {
		return nil, err
	}
	e := &vtEntry{vt: vt, sha: sha1Hex(vt.Source)}
	v.scripts[sha] = e
	return e, nil
}

func (v *VirtualTimeScripter) lookup(sha string) (*vtEntry, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.scripts[sha]
	return e, ok
}

func errCmd(err error) *redis.Cmd { return redis.NewCmdResult(nil, err) }

func (v *VirtualTimeScripter) eval(ctx context.Context, ro bool, script string, keys []string, args []any) *redis.Cmd {
	now, ok := VirtualNow(ctx)
	if !ok {
		return errCmd(ErrNoVirtualNow)
	}
	e, err := v.learn(script)
	if err != nil {
		return errCmd(err)
	}
	if ro {
		return v.next.EvalRO(ctx, e.vt.Source, keys, e.vt.Args(now, args...)...)
	}
	return v.next.Eval(ctx, e.vt.Source, keys, e.vt.Args(now, args...)...)
}

func (v *VirtualTimeScripter) evalSha(ctx context.Context, ro bool, sha string, keys []string, args []any) *redis.Cmd {
	now, ok := VirtualNow(ctx)
	if !ok {
		return errCmd(ErrNoVirtualNow)
	}
	e, ok := v.lookup(sha)
	if !ok {
		return errCmd(redis.ErrNoScript)
	}
	argv := e.vt.Args(now, args...)
	var c *redis.Cmd
	if ro {
		c = v.next.EvalShaRO(ctx, e.sha, keys, argv...)
	} else {
		c = v.next.EvalSha(ctx, e.sha, keys, argv...)
	}
	if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
		if ro {
			return v.next.EvalRO(ctx, e.vt.Source, keys, argv...)
		}
		return v.next.Eval(ctx, e.vt.Source, keys, argv...)
	}
	return c
}

// Eval runs the rewritten script at the context's virtual time.
func (v *VirtualTimeScripter) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return v.eval(ctx, false, script, keys, args)
}

// EvalRO is Eval with EVAL_RO.
func (v *VirtualTimeScripter) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return v.eval(ctx, true, script, keys, args)
}

// EvalSha runs the rewritten script of the original sha1 at the context's
// virtual time; NOSCRIPT until the scripter has seen the original source.
func (v *VirtualTimeScripter) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return v.evalSha(ctx, false, sha1, keys, args)
}

// EvalShaRO is EvalSha with EVALSHA_RO.
func (v *VirtualTimeScripter) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return v.evalSha(ctx, true, sha1, keys, args)
}

// ScriptLoad loads the rewritten script and returns the original's SHA1.
func (v *VirtualTimeScripter) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	e, err := v.learn(script)
	if err != nil {
		return redis.NewStringResult("", err)
	}
	if err := v.next.ScriptLoad(ctx, e.vt.Source).Err(); err != nil {
		return redis.NewStringResult("", err)
	}
	return redis.NewStringResult(sha1Hex(script), nil)
}

// ScriptExists reports, per original SHA1, whether its rewritten script is
// loaded on the server (false for scripts the scripter has not seen).
func (v *VirtualTimeScripter) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	out := make([]bool, len(hashes))
	var ask []string
	var at []int
	for i, h := range hashes {
		if e, ok := v.lookup(h); ok {
			ask, at = append(ask, e.sha), append(at, i)
		}
	}
	if len(ask) > 0 {
		got, err := v.next.ScriptExists(ctx, ask...).Result()
		if err != nil {
			return redis.NewBoolSliceResult(nil, err)
		}
		for k, i := range at {
			out[i] = k < len(got) && got[k]
		}
	}
	return redis.NewBoolSliceResult(out, nil)
}

// Del deletes keys when the next scripter can (redis_rate's Reset); else it
// returns an error.
func (v *VirtualTimeScripter) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	if d, ok := v.next.(interface {
		Del(context.Context, ...string) *redis.IntCmd
	}); ok {
		return d.Del(ctx, keys...)
	}
	return redis.NewIntResult(0, fmt.Errorf("virtual time: %T cannot DEL", v.next))
}
