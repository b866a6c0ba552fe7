package execlimiter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stderrLines is how many of an adapter's last stderr lines an error
// quotes, and stderrLineMax how many bytes of each.
const (
	stderrLines   = 10
	stderrLineMax = 300
)

// lineMax bounds one line of an adapter's answer: a longer one is a bad
// line, never a reason to hold more memory.
const lineMax = 64 << 10

// exitGrace is how long an adapter has to exit by itself once its stdin
// is closed, before its process group is killed: a bound for a hang
// only, never a wait for behaviour.
const exitGrace = 500 * time.Millisecond

// AdapterError is an adapter that broke the line protocol: it exited, it
// did not answer within the bound, or it printed a line that is not an
// answer. It names the process (Command, PID) and carries the request
// under way, the offending Line (for a bad line) and the last lines of
// the process's stderr. The process is killed (its whole process group)
// before the error is returned.
type AdapterError struct {
	Command string
	PID     int
	// Request is the line ratelab wrote ("" when none was under way).
	Request string
	// Line is the adapter's answer that could not be read ("" unless
	// the error is a bad line).
	Line string
	// Stderr holds the last lines the process wrote to stderr.
	Stderr []string
	// Err says what went wrong.
	Err error
}

func (e *AdapterError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "exec %q (pid %d): %v", e.Command, e.PID, e.Err)
	if e.Line != "" {
		fmt.Fprintf(&b, "; its line: %s", quoteLine(e.Line))
	}
	if e.Request != "" {
		fmt.Fprintf(&b, "; the request: %s", e.Request)
	}
	if len(e.Stderr) == 0 {
		b.WriteString("; its stderr is empty")
	} else {
		fmt.Fprintf(&b, "; its stderr ends:\n  %s", strings.Join(e.Stderr, "\n  "))
	}
	return b.String()
}

func (e *AdapterError) Unwrap() error { return e.Err }

// quoteLine shows an answer line as Go quotes it, cut to 300 bytes.
func quoteLine(s string) string {
	if len(s) > stderrLineMax {
		return strconv.Quote(s[:stderrLineMax]) + "..."
	}
	return strconv.Quote(s)
}

// answer is one line of an adapter's stdout.
type answer struct {
	Allowed      *bool    `json:"allowed"`
	Remaining    *int64   `json:"remaining"`
	RetryAfterMS *float64 `json:"retry_after_ms"`
}

// parseAnswer reads one answer line: a JSON object with a boolean
// "allowed", optionally "remaining" (an integer >= 0) and
// "retry_after_ms" (a number >= 0); any other field is an error, so that
// a misspelt field is not taken for a missing one.
func parseAnswer(line string) (answer, error) {
	var a answer
	d := json.NewDecoder(strings.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(&a); err != nil {
		return a, fmt.Errorf(`not an answer {"allowed": true|false} (%w)`, err)
	}
	if d.More() {
		return a, errors.New("more than one JSON value on the line")
	}
	switch {
	case a.Allowed == nil:
		return a, errors.New(`the answer has no "allowed"`)
	case a.Remaining != nil && *a.Remaining < 0:
		return a, fmt.Errorf(`"remaining" is %d, below 0`, *a.Remaining)
	case a.RetryAfterMS != nil && *a.RetryAfterMS < 0:
		return a, fmt.Errorf(`"retry_after_ms" is %v, below 0`, *a.RetryAfterMS)
	}
	return a, nil
}

// request is one line ratelab writes to an adapter's stdin.
type request struct {
	Key   string `json:"key"`
	Cost  int64  `json:"cost"`
	NowUS int64  `json:"now_us"`
}

// proc is one adapter process: `sh -c Command` in a process group of its
// own, its stdin the requests, its stdout the answers (read by a
// goroutine of its own into lines), its stderr kept as its last lines.
// One request at a time: not safe for concurrent use.
type proc struct {
	command string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan lineOrErr
	stderr  *tail
	done    chan struct{} // closed when the process has exited (after Wait)
	errDone chan struct{} // closed when its stderr is read to its end
	waitErr error         // Wait's, once done is closed
	killed  sync.Once
	// answered is set once the process answered a request: before, its
	// start-up is under way, which the caller's deadline does not bound
	answered bool
}

type lineOrErr struct {
	line string
	err  error
}

// startProc starts `sh -c command` with env added to ratelab's own
// environment, in dir ("" for the current directory).
func startProc(command, dir string, env []string) (*proc, error) {
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = sysProcAttr()
	p := &proc{command: command, cmd: cmd, lines: make(chan lineOrErr, 1), stderr: &tail{}, done: make(chan struct{}), errDone: make(chan struct{})}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// pipes of its own, so that Wait returns when the process exits, even
	// when something it started still holds them
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		_, _ = outR.Close(), outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	_, _ = outW.Close(), errW.Close() // the child's ends
	if err != nil {
		_, _ = outR.Close(), errR.Close()
		return nil, fmt.Errorf("exec %q: %w", command, err)
	}
	p.stdin = stdin
	go p.read(outR)
	go func() {
		_, _ = io.Copy(p.stderr, errR)
		_ = errR.Close()
		close(p.errDone)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// read sends each line of stdout to p.lines; at the end, stdout's error
// or io.EOF.
func (p *proc) read(stdout *os.File) {
	defer stdout.Close()
	r := bufio.NewReaderSize(stdout, 4096)
	for {
		line, err := readLine(r)
		if err != nil {
			p.lines <- lineOrErr{err: err}
			close(p.lines)
			return
		}
		p.lines <- lineOrErr{line: line}
	}
}

// errLineTooLong is a line longer than lineMax.
var errLineTooLong = fmt.Errorf("a line longer than %d bytes", lineMax)

// readLine reads one line without its end ("\n" or "\r\n"), at most
// lineMax bytes.
func readLine(r *bufio.Reader) (string, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > lineMax {
			return string(buf[:stderrLineMax]), errLineTooLong
		}
		switch {
		case err == nil:
			return strings.TrimRight(string(buf), "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case len(buf) > 0 && errors.Is(err, io.EOF):
			return string(buf), nil // a last line without its end
		}
		return "", err
	}
}

// pid is the process's id.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// ask writes req and waits for the answer line, at most until ctx is
// done or bound (zero: no bound of its own) passes. The first request's
// wait holds the process's start-up (an interpreter loading its
// libraries: seconds on a loaded machine): startup bounds it instead, and
// ctx's deadline does not. On any failure the process is killed and the error is
// an *AdapterError (or wraps ctx's error, when ctx was cancelled: then
// the process is killed too, since its answer would come to the next
// request).
func (p *proc) ask(ctx context.Context, req request, bound, startup time.Duration) (answer, error) {
	if !p.answered {
		bound = startup
		var release func()
		ctx, release = withoutDeadline(ctx)
		defer release()
	}
	b, _ := json.Marshal(req) // strings and integers: never fails
	reqLine := string(b)
	fail := func(line string, err error) (answer, error) {
		p.kill()
		select { // what it wrote before it died, unless something it started holds its stderr
		case <-p.errDone:
		case <-time.After(exitGrace):
		}
		return answer{}, &AdapterError{Command: p.command, PID: p.pid(), Request: reqLine, Line: line, Stderr: p.stderr.lines(), Err: err}
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		return fail("", p.exitErr(fmt.Errorf("its stdin: %w", err)))
	}
	var timeout <-chan time.Time
	if bound > 0 {
		t := time.NewTimer(bound)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case l, ok := <-p.lines:
		switch {
		case !ok || errors.Is(l.err, io.EOF):
			return fail("", p.exitErr(errors.New("closed its stdout before answering")))
		case errors.Is(l.err, errLineTooLong):
			return fail(l.line, l.err)
		case l.err != nil:
			return fail("", fmt.Errorf("its stdout: %w", l.err))
		}
		a, err := parseAnswer(l.line)
		if err != nil {
			return fail(l.line, err)
		}
		p.answered = true
		return a, nil
	case <-p.done:
		// it exited while something it started may hold its stdout: an
		// answer it wrote before exiting is still in the pipe, or nothing is
		select {
		case l, ok := <-p.lines:
			if ok && l.err == nil {
				a, err := parseAnswer(l.line)
				if err != nil {
					return fail(l.line, err)
				}
				return a, nil
			}
		case <-time.After(exitGrace):
		}
		return fail("", p.exitErr(errors.New("exited before answering")))
	case <-timeout:
		return fail("", fmt.Errorf("no answer within %s (the timeout)", bound))
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// the caller's bound: the adapter's hang, said as such (not
			// wrapped: it is not Redis that did not answer)
			return fail("", fmt.Errorf("no answer within the call's bound (%v)", context.Cause(ctx)))
		}
		p.kill()
		return answer{}, fmt.Errorf("exec %q (pid %d): %w", p.command, p.pid(), context.Cause(ctx))
	}
}

// withoutDeadline is ctx without its deadline: cancelled when ctx is,
// but not when ctx's deadline passes. release frees it.
func withoutDeadline(ctx context.Context) (_ context.Context, release func()) {
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel(context.Cause(ctx))
		}
	})
	return cctx, func() {
		stop()
		cancel(nil)
	}
}

// exitErr is err, or, when the process has exited by now (within
// exitGrace), the exit status in its place.
func (p *proc) exitErr(err error) error {
	select {
	case <-p.done:
	case <-time.After(exitGrace):
		return err
	}
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) {
		return fmt.Errorf("exited (%s) before answering", ee.ProcessState)
	}
	if p.waitErr != nil {
		return fmt.Errorf("%w (%v)", err, p.waitErr)
	}
	return errors.New("exited (exit status 0) before answering")
}

// kill kills the process's group (everything the adapter started, unless
// it left the group) and waits for the process to be reaped.
func (p *proc) kill() {
	p.killed.Do(func() {
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		_ = p.stdin.Close()
		<-p.done
	})
}

// close ends the process: its stdin closed, exitGrace for it to exit by
// itself, then its group killed (also what it left running).
func (p *proc) close() {
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(exitGrace):
	}
	p.kill()
}

// tail keeps the last stderrLines lines written to it. Safe for
// concurrent use (the process writes, an error reads).
type tail struct {
	mu      sync.Mutex
	partial []byte
	last    []string
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(t.partial) < stderrLineMax {
				t.partial = append(t.partial, b[:min(len(b), stderrLineMax-len(t.partial))]...)
			}
			break
		}
		if len(t.partial) < stderrLineMax {
			t.partial = append(t.partial, b[:min(i, stderrLineMax-len(t.partial))]...)
		}
		t.push(string(t.partial))
		t.partial = t.partial[:0]
		b = b[i+1:]
	}
	return n, nil
}

func (t *tail) push(line string) {
	t.last = append(t.last, strings.TrimRight(line, "\r"))
	if len(t.last) > stderrLines {
		t.last = t.last[len(t.last)-stderrLines:]
	}
}

// lines returns the last lines, the unfinished one included.
func (t *tail) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.last...)
	if len(t.partial) > 0 {
		out = append(out, string(t.partial))
	}
	if len(out) > stderrLines {
		out = out[len(out)-stderrLines:]
	}
	return out
}
