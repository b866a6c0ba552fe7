package algorithms

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// DefaultMaxLoads is how many times ScriptPipe.Exec loads scripts and
// resends after NOSCRIPT when its MaxLoads is zero.
const DefaultMaxLoads = 3

// PipeClient is where a ScriptPipe sends its calls: a *redis.Client, a
// *redis.Conn (one connection), a *redis.ClusterClient or a *redis.Ring.
type PipeClient interface {
	redis.Scripter
	Pipeline() redis.Pipeliner
	TxPipeline() redis.Pipeliner
}

// ScriptPipe sends batches of script calls (ScriptCall: a script, its keys
// and arguments) as EVALSHA in one pipeline per batch (a call of a
// function, ScriptCall.Function, as FCALL: it never meets NOSCRIPT). A pipeline does not
// fall back to EVAL as Script.Run does: a call refused with NOSCRIPT (the
// server's script cache was flushed, or a failover) did not run, so Exec
// loads the scripts of the refused calls (SCRIPT LOAD) and resends only
// those calls, in their order. After MaxLoads loads in a row after which
// none of the resent calls ran (a Redis that forgets its scripts faster
// than a round trip), the calls still refused are sent once as EVAL, with
// the script's body, as Script.Run falls back: no flush can refuse that.
// So one Exec of n calls loads at most (n+1)*MaxLoads times.
//
// Calls before a flush have run; those after it are resent after them, so
// calls of one key keep their order within a batch. Between the refusal and
// the resend, other clients' calls may run.
//
// Concurrency: a ScriptPipe is not safe for concurrent use. It reuses its
// commands and their argument slices from one Exec to the next (on a Client
// or a Conn: a call then allocates only its reply and a key that changed),
// and the commands Exec returns are valid until the next Exec. Use one ScriptPipe
// per goroutine; any number of them may share one client.
type ScriptPipe struct {
	// Tx sends each batch, and each resend, as MULTI/EXEC (TxPipeline):
	// no other client's command runs between its calls. On a Cluster the
	// keys of a batch must then hash to one slot.
	Tx bool
	// MaxLoads bounds how many times in a row one Exec loads scripts and
	// resends after NOSCRIPT without any resent call running; zero means
	// DefaultMaxLoads, negative means never (a NOSCRIPT is then returned
	// at once).
	MaxLoads int
	// Loads counts the times Execs met NOSCRIPT and loaded scripts, over
	// the ScriptPipe's life (a caller can tell a flush happened).
	Loads int

	rdb          PipeClient
	pipe, txPipe redis.Pipeliner
	reuse        bool // the client's commands carry no routing cache
	cmds         []*redis.Cmd
	again        []int
	queue        []redis.Cmder // send's, reused
	evalSent     bool          // this Exec resent its refused calls as EVAL
}

// NewScriptPipe returns a ScriptPipe sending to rdb.
func NewScriptPipe(rdb PipeClient) *ScriptPipe {
	p := &ScriptPipe{rdb: rdb}
	switch rdb.(type) {
	case *redis.Client, *redis.Conn:
		// a Cluster's command caches its key's slot (a Ring's is not
		// relied on either): those are built afresh for every call
		p.reuse = true
	}
	return p
}

// Exec sends calls as EVALSHA in one pipeline and returns one command per
// call, in the order of calls, each holding its reply or its error reply
// (a script error, a Lua nil as redis.Nil). Calls refused with NOSCRIPT are
// resent after their scripts are loaded (MaxLoads bounds the loads in a row
// that let none of them run).
//
// The error is nil when every call was answered, even with an error reply.
// Otherwise it is: the failed round trip (network, ctx; the commands carry
// it too); or, naming the script's SHA1, a SCRIPT LOAD that failed or a
// NOSCRIPT still answered to every resent call after MaxLoads loads in a
// row (those commands keep their NOSCRIPT). Exec reads calls' Keys and
// Args only while it runs.
func (p *ScriptPipe) Exec(ctx context.Context, calls []ScriptCall) ([]*redis.Cmd, error) {
	if len(calls) == 0 {
		return nil, nil
	}
	for len(p.cmds) < len(calls) {
		p.cmds = append(p.cmds, nil)
	}
	cmds := p.cmds[:len(calls)]
	for i := range calls {
		cmds[i] = p.command(ctx, cmds[i], calls[i])
	}
	if err := p.send(ctx, cmds); err != nil {
		return cmds, err
	}
	p.evalSent = false
	maxLoads := p.MaxLoads
	if maxLoads == 0 {
		maxLoads = DefaultMaxLoads
	}
	refused := len(calls) + 1
	for loads := 0; ; loads++ {
		p.again = p.again[:0]
		for i, c := range cmds {
			if isNoScript(c.Err()) {
				p.again = append(p.again, i)
			}
		}
		if len(p.again) == 0 {
			return cmds, nil
		}
		if len(p.again) < refused {
			loads = 0 // some call got through since the last load
		}
		refused = len(p.again)
		if loads >= maxLoads {
			if maxLoads > 0 && !p.evalSent {
				// the last resort, as Script.Run's: EVAL sends the body,
				// which no flush can refuse
				p.evalSent = true
				if err := p.sendEval(ctx, calls, cmds); err != nil {
					return cmds, err
				}
				continue
			}
			first := calls[p.again[0]].Script
			return cmds, fmt.Errorf("script %s: NOSCRIPT after loading it %d times in a row: %w", first.Hash(), loads, cmds[p.again[0]].Err())
		}
		p.Loads++
		for k, i := range p.again {
			s := calls[i].Script
			if k > 0 && seen(calls, p.again[:k], s) {
				continue
			}
			if err := s.Load(ctx, p.rdb).Err(); err != nil {
				return cmds, fmt.Errorf("script %s: SCRIPT LOAD after NOSCRIPT: %w", s.Hash(), err)
			}
		}
		resend := make([]*redis.Cmd, 0, len(p.again))
		for _, i := range p.again {
			resend = append(resend, cmds[i])
		}
		if err := p.send(ctx, resend); err != nil {
			return cmds, err
		}
	}
}

// sendEval resends the calls at p.again as EVAL (the script's body), in
// their order, in one pipeline, replacing their commands in cmds. Error
// replies stay in the commands; only a failed round trip is returned.
func (p *ScriptPipe) sendEval(ctx context.Context, calls []ScriptCall, cmds []*redis.Cmd) error {
	var pipe redis.Pipeliner
	if p.Tx {
		pipe = p.rdb.TxPipeline()
	} else {
		pipe = p.rdb.Pipeline()
	}
	for _, i := range p.again {
		cmds[i] = calls[i].Script.Eval(ctx, pipe, calls[i].Keys, calls[i].Args...)
	}
	_, err := pipe.Exec(ctx)
	var re redis.Error
	if err == nil || errors.As(err, &re) {
		return nil
	}
	return err
}

// seen reports whether the script s is that of one of the calls at idx.
func seen(calls []ScriptCall, idx []int, s *redis.Script) bool {
	for _, i := range idx {
		if calls[i].Script.Hash() == s.Hash() {
			return true
		}
	}
	return false
}

// command returns the EVALSHA (or FCALL: ScriptCall.Function) of c: old with its arguments overwritten
// when it can be reused (a Client or a Conn, as many arguments), else a new
// command built as go-redis's EvalSha builds it.
func (p *ScriptPipe) command(ctx context.Context, old *redis.Cmd, c ScriptCall) *redis.Cmd {
	args := c.Args
	if len(args) == 1 { // go-redis flattens a lone slice argument
		switch v := args[0].(type) {
		case []string:
			args = make([]any, len(v))
			for i, s := range v {
				args[i] = s
			}
		case []any:
			args = v
		}
	}
	n := 3 + len(c.Keys) + len(args)
	verb, name := "evalsha", ""
	if c.Function != "" {
		verb, name = "fcall", c.Function
	} else {
		name = c.Script.Hash()
	}
	if p.reuse && old != nil && len(old.Args()) == n {
		// strings are boxed again only when they changed: boxing allocates
		a := old.Args()
		setString(a, 0, verb) // an EVAL of the last resort (sendEval) is reused too
		setString(a, 1, name)
		a[2] = len(c.Keys)
		for i, k := range c.Keys {
			setString(a, 3+i, k)
		}
		copy(a[3+len(c.Keys):], args)
		return old
	}
	a := make([]any, n)
	a[0], a[1], a[2] = verb, name, len(c.Keys)
	for i, k := range c.Keys {
		a[3+i] = k
	}
	copy(a[3+len(c.Keys):], args)
	cmd := redis.NewCmd(ctx, a...)
	if len(c.Keys) > 0 {
		cmd.SetFirstKeyPos(3)
	}
	return cmd
}

// setString sets a[i] to s unless it holds s already.
func setString(a []any, i int, s string) {
	if v, ok := a[i].(string); !ok || v != s {
		a[i] = s
	}
}

// send sends cmds in one pipeline (MULTI/EXEC with Tx). Error replies stay
// in their commands; only a failed round trip is returned.
func (p *ScriptPipe) send(ctx context.Context, cmds []*redis.Cmd) error {
	// a Pipeliner is empty again after Exec: one of each kind is kept
	pipe := &p.pipe
	if p.Tx {
		pipe = &p.txPipe
	}
	if *pipe == nil {
		if p.Tx {
			*pipe = p.rdb.TxPipeline()
		} else {
			*pipe = p.rdb.Pipeline()
		}
	}
	// queued at once: one slice of the pipeline's per round trip, not one
	// grown command by command
	p.queue = p.queue[:0]
	for _, c := range cmds {
		p.queue = append(p.queue, c)
	}
	_ = (*pipe).BatchProcess(ctx, p.queue...)
	_, err := (*pipe).Exec(ctx)
	var re redis.Error
	if err == nil || errors.As(err, &re) {
		return nil
	}
	return err
}

// isNoScript reports whether err is the NOSCRIPT reply to an EVALSHA.
func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}
