package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// A command's calls can fail for a reason that is the server's state, not
// the call's: Redis out of memory (maxmemory reached under noeviction, it
// refuses writes with OOM), Redis turned into a replica (REPLICAOF: it
// refuses writes with READONLY), the connection closed by the server
// (CLIENT KILL, its timeout setting, a proxy). The error that ends such a
// command must say so first, not show what the cause
// left behind (EXECABORT, EOF, "no call was decided", keys gone because
// a refresh was refused).

// CauseKind is the server state a *CauseError names.
type CauseKind int

const (
	// OutOfMemory: maxmemory reached under a policy that does not evict
	// (noeviction): writes are refused with OOM.
	OutOfMemory CauseKind = iota + 1
	// ReadOnly: the server became a read-only replica (REPLICAOF host
	// port): writes are refused with READONLY.
	ReadOnly
	// Closed: the server closed the connection (CLIENT KILL, its timeout
	// setting, a proxy in between).
	Closed
)

// CauseError names the server state that made a command's calls fail. Err
// is the error it explains (what the command saw). Its fields beyond Kind
// are zero when they could not be read (INFO refused, the server gone).
type CauseError struct {
	Kind CauseKind
	// MaxMemory (bytes), Policy and Used (bytes): OutOfMemory's figures
	// from INFO memory.
	MaxMemory, Used int64
	Policy          string
	// Master is ReadOnly's master ("host:port") from INFO replication.
	Master string
	Err    error
}

func (e *CauseError) Error() string {
	return e.Sentence() + ": " + e.Err.Error()
}

// Sentence is the cause alone, without Err: one line naming the state and
// what to do about it.
func (e *CauseError) Sentence() string {
	switch e.Kind {
	case OutOfMemory:
		figures := "maxmemory reached"
		if e.MaxMemory > 0 {
			figures = fmt.Sprintf("maxmemory %d B reached", e.MaxMemory)
		}
		if e.Policy != "" {
			figures += ", policy " + e.Policy
		}
		return fmt.Sprintf("Redis is out of memory (%s): it refused the command's writes (OOM); raise maxmemory or free memory, then run it again", figures)
	case ReadOnly:
		of := ""
		if e.Master != "" {
			of = " of " + e.Master
		}
		return fmt.Sprintf("Redis became a read-only replica%s while the command ran (REPLICAOF): it refused the command's writes (READONLY); point --redis at the master, or run REPLICAOF NO ONE", of)
	case Closed:
		return "the connection was closed by the server (CLIENT KILL, its timeout setting or a proxy) and the command could not go on"
	}
	return "Redis failed"
}

func (e *CauseError) Unwrap() error { return e.Err }

// Label is the cause in a few words, for a parenthesis: "Redis is out of
// memory", "Redis became a read-only replica", "the server closed the
// connection".
func (e *CauseError) Label() string {
	switch e.Kind {
	case OutOfMemory:
		return "Redis is out of memory"
	case ReadOnly:
		return "Redis became a read-only replica"
	case Closed:
		return "the server closed the connection"
	}
	return "Redis failed"
}

// IsClosed reports whether err is the server closing the connection: EOF
// on a read, a reset or a broken pipe (as after CLIENT KILL).
func IsClosed(err error) bool {
	return err != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
}

// closedText matches the text a closed connection leaves in an error that
// was formatted, not wrapped ("... (last error: x: EOF)").
var closedText = regexp.MustCompile(`(^|: )EOF\b|connection reset by peer|broken pipe`)

// causeOf is the kind err's text or chain names, 0 when none.
func causeOf(err error) CauseKind {
	s := err.Error()
	switch {
	case strings.Contains(s, "OOM command not allowed"):
		return OutOfMemory
	case strings.Contains(s, "READONLY "):
		return ReadOnly
	case IsClosed(err) || closedText.MatchString(s):
		return Closed
	}
	return 0
}

// Cause returns the *CauseError that err's own text or chain names (OOM,
// READONLY, a closed connection), without reading anything from the
// server (no figures); nil when it names none.
func Cause(err error) *CauseError {
	var ce *CauseError
	if err == nil {
		return nil
	}
	if errors.As(err, &ce) {
		return ce
	}
	if k := causeOf(err); k != 0 {
		return &CauseError{Kind: k, Err: err}
	}
	return nil
}

// hidesCause reports whether err is what a server state leaves behind
// without naming it: a transaction discarded (EXECABORT), the command's
// keys gone (their marker's refresh refused), calls failed or kept
// failing.
func hidesCause(err error) bool {
	s := err.Error()
	if IsTimeout(err) || strings.Contains(s, "timeout") || strings.Contains(s, "did not answer") || strings.Contains(s, "refused") {
		return false // a hung or gone server: nothing to read from it
	}
	return IsEnvError(err) || strings.Contains(s, "EXECABORT") || strings.Contains(s, "no call was decided") ||
		strings.Contains(s, "calls failed") || strings.Contains(s, "kept failing")
}

// Explain returns err (nil stays nil) wrapped in a *CauseError when the
// server's state made it: named by the error itself (OOM, READONLY, a
// closed connection), or, when the error hides it (EXECABORT, keys gone
// because their refresh was refused, calls failed), found by reading INFO
// memory and replication of c within ctx: maxmemory reached under
// noeviction, or the server now a replica. An err that already holds a
// *CauseError, a restart (*EnvError with Restarted) and an interrupted
// command (context.Canceled) are returned as they are; so is err when INFO
// is refused or gives nothing. Safe for concurrent use.
func Explain(ctx context.Context, c redis.UniversalClient, err error) error {
	var ce *CauseError
	var env *EnvError
	if err == nil || errors.As(err, &ce) || errors.Is(err, context.Canceled) ||
		errors.As(err, &env) && env.Restarted {
		return err
	}
	kind := causeOf(err)
	ce = &CauseError{Kind: kind, Err: err}
	if errors.As(err, &env) && env.Vanished {
		// the marker expired because its refresh was refused, not
		// necessarily because someone removed the keys
		ce.Err = fmt.Errorf("the run's marker key in Redis at %s was not refreshed and expired (%w)", env.Addr, ErrBrokenEnv)
	}
	if c == nil || kind == 0 && !hidesCause(err) {
		if kind == 0 {
			return err
		}
		return ce
	}
	if info, ierr := c.Info(ctx, "memory", "replication").Result(); ierr == nil {
		f := InfoFields(info)
		ce.MaxMemory, _ = strconv.ParseInt(f["maxmemory"], 10, 64)
		ce.Used, _ = strconv.ParseInt(f["used_memory"], 10, 64)
		ce.Policy = f["maxmemory_policy"]
		if f["role"] == "slave" {
			ce.Master = f["master_host"] + ":" + f["master_port"]
		}
		if kind == 0 {
			switch {
			case f["role"] == "slave":
				ce.Kind = ReadOnly
			case ce.MaxMemory > 0 && ce.Used >= ce.MaxMemory && ce.Policy == "noeviction":
				ce.Kind = OutOfMemory
			}
		}
	}
	if ce.Kind == 0 {
		return err
	}
	return ce
}

// A command's figures are the limiter's only while its Redis is the one it
// started on, with the command's keys in it: a restart
// (INFO's run_id changes: the keys and the script cache are gone), a
// FLUSHALL or FLUSHDB, an UNLINK of the command's keys by someone else make
// the limiter start from nothing mid-command, and a verify would then call
// a correct limiter VIOLATED. Such a command ends with an *EnvError.

// ErrBrokenEnv is wrapped by every *EnvError: the command's Redis changed
// under it, so no verdict and no complete result can come of it.
var ErrBrokenEnv = errors.New("the Redis changed under the command")

// EnvError says what changed in a command's Redis while it ran.
type EnvError struct {
	// Addr is the server (a Cluster node) that changed.
	Addr string
	// Restarted: its run_id changed from Before to After.
	Restarted     bool
	Before, After string
	// Vanished: the command's own marker key was gone (a FLUSHALL,
	// FLUSHDB, a restart without persistence, or someone removed it).
	Vanished bool
}

func (e *EnvError) Error() string {
	if e.Restarted {
		return fmt.Sprintf("Redis at %s restarted while the command ran (run_id %.8s… became %.8s…): the command's keys and loaded scripts were lost, so its figures are not the limiter's; run it again", e.Addr, e.Before, e.After)
	}
	return fmt.Sprintf("the command's keys were removed from Redis at %s while it ran (FLUSHALL, FLUSHDB, UNLINK or an eviction by someone else): its figures are not the limiter's; run it again", e.Addr)
}

func (e *EnvError) Unwrap() error { return ErrBrokenEnv }

// IsEnvError reports whether err says the command's Redis changed under it.
func IsEnvError(err error) bool { return errors.Is(err, ErrBrokenEnv) }
