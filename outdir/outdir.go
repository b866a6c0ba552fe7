// Package outdir owns a command's results on disk: the results directory
// (--out) a command prepares and claims for itself, and the atomic writes
// of the files put there or at an output flag's path. It renders nothing:
// package reports turns results into bytes, and its directory writers put
// them here through WriteFile and Create.
package outdir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/measure"
)

// ResultFiles are the names (filepath.Match patterns) of the files a
// ratelab command writes to its results directory: a directory holding
// only these, or nothing, is ratelab's.
// Files starting ".ratelab-" are a command's temporary files (a write
// stopped by kill -9 leaves one).
var ResultFiles = []string{"results.json", "decisions.*", "report.md", "report.html", "verify.json", "*.png", "*.svg", ".ratelab-*"}

// Resolve returns the results directory of a run: out, or results/<runID>
// when out is empty. It creates nothing (see Prepare). An out that
// exists and is not empty is refused unless force, so that old and new
// results never mix; with force, the files of an earlier ratelab run are
// removed first, and anything else in it (a file not in ResultFiles, or a
// directory) is refused even then. Errors are *field.Error naming "out".
func Resolve(out, runID string, force bool) (string, error) {
	if out == "" {
		return filepath.Join("results", runID), nil
	}
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) == 0 {
		return out, nil // missing or empty: Prepare creates or fills it
	}
	var foreign []string
	for _, e := range entries {
		if !isResultFile(e.Name()) || e.IsDir() {
			foreign = append(foreign, e.Name())
		}
	}
	switch {
	case len(foreign) > 0:
		return "", field.Errorf("out", "%s holds files that are not ratelab results (%s): choose an empty or new directory", out, strings.Join(foreign[:min(len(foreign), 3)], ", "))
	case !force:
		return "", field.Errorf("out", "%s already holds results (%s); pass --force to replace them, or choose a new directory", out, entries[0].Name())
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(out, e.Name())); err != nil {
			return "", field.Errorf("out", "%w", err)
		}
	}
	return out, nil
}

func isResultFile(name string) bool {
	for _, p := range ResultFiles {
		if ok, _ := filepath.Match(p, name); ok {
			return true
		}
	}
	return false
}

// Prepare is Resolve, then creates the directory (and its parents),
// claims it for this command (no other ratelab command can write there
// until ReleaseAll or this process ends: a second one is refused, naming
// the directory as in use), checks it again, and checks that files can be
// written there (a probe file is created and
// removed), so that a bad or read-only out stops a command before it
// measures anything. undo removes what a command then wrote nothing
// useful into: the directory's decisions.jsonl, and the directory itself
// when Prepare created it and it is empty; call it when the command
// stops before it has results (Redis unreachable, nothing replayed).
// Errors are *field.Error naming "out".
func Prepare(out, runID string, force bool) (dir string, undo func(), err error) {
	if dir, err = Resolve(out, runID, force); err != nil {
		return "", nil, err
	}
	_, statErr := os.Stat(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, field.Errorf("out", "%s is not writable: %w", dir, err)
	}
	if err := claim(dir); err != nil {
		return "", nil, err
	}
	// checked again now that it is ours: a command that held it a moment ago may have left results
	if _, err := Resolve(dir, runID, force); err != nil {
		release(dir)
		return "", nil, err
	}
	f, err := os.CreateTemp(dir, ".ratelab-probe-*")
	if err != nil {
		return "", nil, field.Errorf("out", "%s is not writable: %w", dir, err)
	}
	_ = f.Close() // an empty probe, removed next: the removal's error says enough
	if err := os.Remove(f.Name()); err != nil {
		return "", nil, field.Errorf("out", "%w", err)
	}
	undo = func() {
		// tidying after a command that stopped, whose error is the one returned
		_ = os.Remove(filepath.Join(dir, "decisions.jsonl"))
		if os.IsNotExist(statErr) {
			_ = os.Remove(dir) // only if still empty
		}
		release(dir)
	}
	return dir, undo, nil
}

// CreateDecisionLog creates dir (and its parents), claims it as
// Prepare does, and creates dir/decisions.jsonl, the log every decision
// streams to. The log is created exclusively: an existing file (or a
// symlink) of that name is never opened, so two commands never share one
// (Resolve removed an earlier run's under --force). The caller closes the
// log. Errors are *field.Error naming "out".
func CreateDecisionLog(dir string) (*measure.DecisionLog, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, field.Errorf("out", "%w", err)
	}
	if err := claim(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "decisions.jsonl")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, field.Errorf("out", "%s already exists: another command writes to %s, or wrote there; choose a new directory", path, dir)
	}
	if err != nil {
		return nil, field.Errorf("out", "%w", err)
	}
	return measure.NewDecisionLog(f), nil
}

// WriteFile writes the file path with write, atomically: into a temporary
// file beside it, renamed over path once written and closed. A symlink at
// path is replaced, never written through, and a reader sees the old file
// or the whole new one. A file that cannot be created is a *field.Error
// naming "out"; the errors of write and of closing the file are returned
// as they are (the temporary file is then removed).
func WriteFile(path string, write func(w io.Writer) error) error {
	f, err := Create(path, true)
	if err != nil {
		return field.Errorf("out", "%w", err)
	}
	if err := write(f); err != nil {
		f.Abort()
		return err
	}
	return f.Close()
}

// Output is a file being written by ratelab (Create): the bytes go
// to a temporary file beside the destination, which appears only when
// Close succeeds. Not safe for concurrent use.
type Output struct {
	*os.File
	path    string
	replace bool
	done    bool
}

// Create starts writing the file path (an output flag's file:
// --cpuprofile, --junit, a results file). Without replace an existing path
// (a file, a symlink, anything) is refused at once and again at Close,
// which never replaces one that appeared meanwhile; with replace, Close
// renames over it (a symlink is replaced, never followed). Errors name
// path; an existing one wraps fs.ErrExist and says --force.
func Create(path string, replace bool) (*Output, error) {
	if !replace {
		if err := refuseExisting(path); err != nil {
			return nil, err
		}
	}
	if st, err := os.Lstat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s is a directory", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".ratelab-"+filepath.Base(path)+"-*")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o644); err != nil { // CreateTemp's 0600 would hide results from their readers
		_ = f.Close()           // empty, discarded
		_ = os.Remove(f.Name()) // discarded
		return nil, err
	}
	return &Output{File: f, path: path, replace: replace}, nil
}

func refuseExisting(path string) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s already exists: pass --force to replace it, or choose a new name: %w", path, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Close flushes and closes the temporary file and puts it at its path
// (see Create); on any error the temporary file is removed and the
// path left as it was. Closing twice is a no-op.
func (o *Output) Close() error {
	if o.done {
		return nil
	}
	o.done = true
	tmp := o.Name()
	err := o.File.Close() // no fsync: the rename is for readers and symlinks, not for power loss

	if err == nil && o.replace {
		err = os.Rename(tmp, o.path)
	} else if err == nil {
		// a hard link fails when path exists: a file that appeared meanwhile is never replaced
		if err = os.Link(tmp, o.path); errors.Is(err, fs.ErrExist) {
			err = refuseExisting(o.path)
		}
	}
	if err != nil || !o.replace {
		_ = os.Remove(tmp) // linked, or failed: the temporary name goes either way
	}
	return err
}

// Finish ends o as a command's deferred cleanup: Close when used (o was
// written), else Abort (the path left as it was); a Close that fails, the
// file not at its path, is said on w as "ratelab: NAME: ERROR".
func (o *Output) Finish(used bool, w io.Writer, name string) {
	if !used {
		o.Abort()
	} else if err := o.Close(); err != nil {
		fmt.Fprintf(w, "ratelab: %s: %v\n", name, err)
	}
}

// Abort closes the temporary file and removes it: path is left as it was.
func (o *Output) Abort() {
	if o.done {
		return
	}
	o.done = true
	_ = o.File.Close()      // discarded
	_ = os.Remove(o.Name()) // discarded
}

// claims are the results directories this process holds (claim): each an
// open directory with an exclusive flock(2), which the kernel drops when
// the process ends, kill -9 included.
var claims = struct {
	sync.Mutex
	m map[string]*os.File
}{m: map[string]*os.File{}}

// claim takes dir for this process, or says another command holds it.
// Claiming a directory this process holds is a no-op.
func claim(dir string) error {
	key, err := filepath.Abs(dir)
	if err != nil {
		return field.Errorf("out", "%w", err)
	}
	claims.Lock()
	defer claims.Unlock()
	if claims.m[key] != nil {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return field.Errorf("out", "%w", err)
	}
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = d.Close() // read only
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return field.Errorf("out", "%s is in use by another ratelab command: give each command its own directory", dir)
		}
		return field.Errorf("out", "%s: lock: %w", dir, err)
	}
	claims.m[key] = d
	return nil
}

func release(dir string) {
	key, err := filepath.Abs(dir)
	if err != nil {
		return
	}
	claims.Lock()
	defer claims.Unlock()
	if d := claims.m[key]; d != nil {
		_ = d.Close() // closing drops the lock
		delete(claims.m, key)
	}
}

// ReleaseAll lets go of every results directory this process claimed
// (Prepare, CreateDecisionLog), so that another command may write there;
// a command calls it when it ends (the process ending does it too).
func ReleaseAll() {
	claims.Lock()
	defer claims.Unlock()
	for k, d := range claims.m {
		_ = d.Close() // closing drops the lock
		delete(claims.m, k)
	}
}
