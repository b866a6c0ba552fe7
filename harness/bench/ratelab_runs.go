package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/callguard"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/measure"
)

// benchKey is the key of decision i's key number k: 12 digits, as
// redis-benchmark's __rand_int__.
func benchKey(prefix string, k int) string { return fmt.Sprintf("%s{%012d}", prefix, k) }

func hotKey(prefix string) string { return prefix + "{hot}" }

// reconnectFor bounds how long a bench worker opens new connections while
// the server keeps closing them, as run's calls go on within --max-outage
// (2 s by default).
const reconnectFor = 2 * time.Second

// ratelabRun is one run of ratelab's load generator.
type ratelabRun struct {
	// run.Decisions counts the calls answered with a decision (allowed +
	// denied); errors the calls answered with an error reply.
	run                     measure.BenchRun
	allowed, denied, errors int64
	hist                    *hdrhistogram.Histogram
}

// benchConn is where a worker sends its pipelines: its own connection to
// one server, or a ClusterClient. Its Scripter loads the script again
// after NOSCRIPT.
type benchConn interface {
	algorithms.PipeClient
	Ping(ctx context.Context) *redis.StatusCmd
}

// runRatelab runs Clients workers, each on its own connection sending
// pipelines of Pipeline EVALSHA calls built from call, until n calls were
// sent (n > 0) or Duration passed.
func (b *bencher) runRatelab(ctx context.Context, call Call, path, prefix string, n int64) (ratelabRun, error) {
	cfg := b.cfg
	var keys []string
	if path == measure.PathAllow {
		keys = make([]string, cfg.Keys)
		for i := range keys {
			keys[i] = benchKey(prefix, i)
		}
	} else {
		keys = []string{hotKey(prefix)}
	}
	var remaining atomic.Int64
	remaining.Store(n)
	interval := time.Duration(0)
	if cfg.Rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(cfg.Clients*cfg.Pipeline) / cfg.Rate)
	}

	// the run's call guard: the outage of a server that keeps closing
	// the connections (no bound on a round trip but the client's: a slow
	// call is a measurement, not a failure)
	guard := callguard.New(callguard.Config{MaxOutage: reconnectFor})
	results := make([]workerResult, cfg.Clients)
	var ready, done sync.WaitGroup
	startGate := make(chan struct{})
	var start time.Time
	for w := range cfg.Clients {
		ready.Add(1)
		done.Add(1)
		go func(w int) {
			defer done.Done()
			r := &results[w]
			r.hist = newHist()
			var conn benchConn
			var reopen func() benchConn
			if c, ok := b.client.(*redis.Client); ok {
				cn := c.Conn()
				defer func() { _ = cn.Close() }() // a pinned connection of ratelab's own pool
				conn = cn
				reopen = func() benchConn { // after the server closed it (CLIENT KILL)
					_ = cn.Close() // a dead connection: nothing to flush
					cn = c.Conn()
					return cn
				}
			} else {
				conn = b.client.(*redis.ClusterClient) // the client routes each pipeline's calls
				reopen = func() benchConn { return conn }
			}
			err := conn.Ping(ctx).Err() // connect before the clock starts
			// the server may close it here as in the loop (CLIENT KILL): opened
			// again, unless Ctrl-C closed it (server.AbortCalls)
			for since := time.Now(); server.IsClosed(err) && time.Since(since) < reconnectFor && ctx.Err() == nil && server.Aborted().Before(since); {
				time.Sleep(10 * time.Millisecond)
				conn = reopen()
				err = conn.Ping(ctx).Err()
			}
			ready.Done()
			if err != nil {
				r.err = err
				return
			}
			<-startGate
			wk := worker{conn: conn, reopen: reopen, guard: guard, call: call, keys: keys, id: w, cfg: cfg, counted: n > 0, remaining: &remaining,
				start: start, interval: interval, out: r}
			r.err = wk.loop(ctx)
		}(w)
	}
	ready.Wait()
	cpu0 := processCPU()
	start = time.Now()
	close(startGate)
	done.Wait()
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0

	out := ratelabRun{hist: newHist()}
	var errs []error
	var firstFailed error
	for _, r := range results {
		out.allowed += r.allowed
		out.denied += r.denied
		out.errors += r.errors
		out.hist.Merge(r.hist)
		if r.err != nil {
			errs = append(errs, r.err)
		}
		if firstFailed == nil {
			firstFailed = r.firstFailed
		}
	}
	out.run.Decisions = out.allowed + out.denied
	if len(errs) > 0 {
		return out, fmt.Errorf("ratelab run: %w", errs[0])
	}
	if out.errors > 0 && out.run.Decisions == 0 {
		// the calls' own error: the server state that refused them is
		// named by it (server.Explain), not hidden behind a count
		return out, fmt.Errorf("ratelab run: no call was decided (%d failed), the first with: %w", out.errors, firstFailed)
	}
	out.run.Tool = "ratelab"
	out.run.Seconds = elapsed.Seconds()
	if out.run.Seconds > 0 {
		out.run.PerS = float64(out.run.Decisions) / out.run.Seconds
		out.run.ClientCPUPct = 100 * cpu.Seconds() / out.run.Seconds
	}
	out.run.P50US = out.hist.ValueAtQuantile(50)
	out.run.P99US = out.hist.ValueAtQuantile(99)
	return out, nil
}

// workerResult is what one worker counted; only it writes there.
type workerResult struct {
	allowed, denied, errors int64
	hist                    *hdrhistogram.Histogram
	err                     error
	// firstFailed is the error of the first call that failed (counted
	// in errors), nil when none did
	firstFailed error
}

// failed counts a call that failed with err.
func (r *workerResult) failed(err error) {
	r.errors++
	if r.firstFailed == nil {
		r.firstFailed = err
	}
}

// worker is one client of a run.
type worker struct {
	conn      benchConn
	reopen    func() benchConn // a new connection, after the server closed conn
	guard     *callguard.Guard // the run's, shared by its workers
	call      Call
	keys      []string
	id        int
	cfg       Config
	counted   bool          // stop when remaining runs out, else at start + Duration
	remaining *atomic.Int64 // calls left to send, shared by the run's workers
	start     time.Time
	interval  time.Duration // between pipelines when paced; 0: closed loop
	out       *workerResult
}

// loop is one client's loop. Its calls, their argument slices and the
// pipe's commands are built once and reused: only the key and the nonce
// change, in place. Calls refused with NOSCRIPT (the server's script cache
// was flushed) did not run: the pipe loads the script again and resends
// them (algorithms.ScriptPipe; a Redis that forgets the script faster than
// a round trip is reported, not measured). Error replies are counted. A
// connection the server closed (CLIENT KILL, its timeout setting) is
// opened again and the loop goes on, the calls that got no reply not
// counted (returned to the count left to send), unless the server closed
// connections for reconnectFor (the run's call guard tells, every worker's
// round trips counting): that error is returned, as is any other broken
// connection.
func (wk *worker) loop(ctx context.Context) error {
	call, keys, cfg := wk.call, wk.keys, wk.cfg
	p := cfg.Pipeline
	calls := make([]algorithms.ScriptCall, p)
	nonces := make([][][]byte, p)
	for i := range calls {
		args := make([]any, 0, len(call.Args))
		for j, s := range call.Args {
			if call.isNonce(j) {
				buf := []byte(fmt.Sprintf("%03d%09d", wk.id%1000, 0))
				nonces[i] = append(nonces[i], buf)
				args = append(args, buf)
				continue
			}
			args = append(args, s)
		}
		calls[i] = algorithms.ScriptCall{Script: call.Script, Keys: []string{keys[0]}, Args: args}
	}
	rng := rand.New(rand.NewPCG(uint64(wk.id)+1, uint64(wk.start.UnixNano())))
	pipe := algorithms.NewScriptPipe(wk.conn)
	deadline := wk.start.Add(cfg.Duration)
	var counter uint64
	intervalUS := wk.interval.Microseconds()
	next := wk.start
	h := wk.out.hist
	for {
		size := p
		if wk.counted {
			left := wk.remaining.Add(-int64(p))
			if left <= -int64(p) {
				return nil
			}
			if left < 0 {
				size = p + int(left)
			}
		} else if !time.Now().Before(deadline) {
			return nil
		}
		if wk.interval > 0 {
			if !wk.counted && !next.Before(deadline) {
				return nil // a run of Duration: the next pipeline is due after its end (bench --rate 0.0001 waited for hours)
			}
			if wait := time.Until(next); wait > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(wait):
				}
			}
			next = next.Add(wk.interval)
		}
		for i := 0; i < size; i++ {
			if len(keys) > 1 {
				calls[i].Keys[0] = keys[rng.IntN(len(keys))]
			}
			for _, buf := range nonces[i] {
				counter++
				putDigits(buf[3:], counter)
			}
		}
		trip := wk.guard.Begin(ctx, size)
		cmds, err := trip.Exec(pipe, calls[:size])
		_ = trip.End(err) // no bound: no stall
		if err != nil && !server.IsClosed(err) {
			return err
		}
		if err != nil {
			if wk.guard.Note(err) != nil || ctx.Err() != nil {
				return fmt.Errorf("%w (the server closed every new connection for %s)", err, reconnectFor)
			}
			lost := int64(0)
			for _, cmd := range cmds {
				if server.IsClosed(cmd.Err()) {
					lost++
					continue
				}
				if d, err := decode(call, cmd); err != nil {
					wk.out.failed(err)
				} else if d {
					wk.out.allowed++
				} else {
					wk.out.denied++
				}
			}
			if wk.counted {
				wk.remaining.Add(lost)
			}
			wk.conn = wk.reopen()
			pipe = algorithms.NewScriptPipe(wk.conn)
			time.Sleep(10 * time.Millisecond) // not a busy loop on a server that closes every connection
			continue
		}
		_ = wk.guard.Note(nil)
		rtt := max(trip.Recv.Sub(trip.Sent).Microseconds(), 1)
		for _, cmd := range cmds {
			d, err := decode(call, cmd)
			switch {
			case err != nil:
				wk.out.failed(err)
			case d:
				wk.out.allowed++
			default:
				wk.out.denied++
			}
		}
		if wk.interval > 0 {
			for i := 0; i < size; i++ {
				_ = h.RecordCorrectedValue(rtt, intervalUS)
			}
		} else {
			_ = h.RecordValues(rtt, int64(size))
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// decode reads one call's verdict: allowed or denied, or an error (an
// error reply, or a reply its limiter cannot read).
func decode(call Call, cmd *redis.Cmd) (allowed bool, err error) {
	if err := cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	if call.decode == nil {
		return false, errors.New("bench: a Call not made by CallOf cannot read replies")
	}
	d, err := call.decode(cmd.Val())
	return d.Allowed, err
}

// putDigits writes n's last len(buf) decimal digits into buf, zero-padded.
func putDigits(buf []byte, n uint64) {
	for i := len(buf) - 1; i >= 0; i-- {
		buf[i] = byte('0' + n%10)
		n /= 10
	}
}
