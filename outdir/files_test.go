package outdir

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An output flag's file (Create): an existing one is refused without
// replace, at once and at Close (a file that appeared meanwhile is kept);
// with replace a symlink is replaced, not followed; a write that failed
// leaves the path as it was.
func TestCreate(t *testing.T) {
	dir := t.TempDir()
	write := func(path string, replace bool, data string) error {
		t.Helper()
		o, err := Create(path, replace)
		if err != nil {
			return err
		}
		if _, err := o.WriteString(data); err != nil {
			t.Fatal(err)
		}
		return o.Close()
	}
	read := func(path string) string { b, _ := os.ReadFile(path); return string(b) }

	existing := filepath.Join(dir, "cpu.prof")
	if err := os.WriteFile(existing, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := write(existing, false, "new"); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "--force") {
		t.Errorf("existing without replace: %v; want refused, saying --force", err)
	}
	if got := read(existing); got != "old" {
		t.Errorf("existing file now %q", got)
	}
	if err := write(existing, true, "new"); err != nil || read(existing) != "new" {
		t.Errorf("existing with replace: %v, %q", err, read(existing))
	}

	late := filepath.Join(dir, "late.prof")
	o, err := Create(late, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(late, []byte("someone else's"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); !errors.Is(err, fs.ErrExist) || read(late) != "someone else's" {
		t.Errorf("a file that appeared meanwhile: %v, now %q; want it refused and kept", err, read(late))
	}

	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.prof")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if err := write(link, false, "x"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("a symlink without replace: %v; want refused", err)
	}
	if err := write(link, true, "mine"); err != nil || read(outside) != "keep" || read(link) != "mine" {
		t.Errorf("a symlink with replace: %v; outside %q, link %q; want the link replaced", err, read(outside), read(link))
	}

	failed := filepath.Join(dir, "failed.json")
	if err := WriteFile(failed, func(io.Writer) error { return errors.New("boom") }); err == nil {
		t.Error("a failed write returned no error")
	}
	if _, err := os.Lstat(failed); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed write left %s: %v", failed, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".ratelab-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// decisions.jsonl is created exclusively: a planted symlink or another
// command's log is never opened.
func TestCreateDecisionLogExclusive(t *testing.T) {
	defer ReleaseAll()
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "decisions.jsonl")); err != nil {
		t.Fatal(err)
	}
	if log, err := CreateDecisionLog(dir); err == nil {
		_ = log.Close()
		t.Error("a planted decisions.jsonl symlink was opened")
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Errorf("written through the symlink: %q", b)
	}
}

// Finish: an unused Output leaves nothing at its path; a used one is put
// there; a Close that fails is said on w with the name given.
func TestOutputFinish(t *testing.T) {
	dir := t.TempDir()
	unused := filepath.Join(dir, "unused.prof")
	o, err := Create(unused, false)
	if err != nil {
		t.Fatal(err)
	}
	var said strings.Builder
	o.Finish(false, &said, "--cpuprofile")
	if _, err := os.Lstat(unused); !errors.Is(err, fs.ErrNotExist) || said.Len() != 0 {
		t.Errorf("unused: %v, said %q; want no file and nothing said", err, said.String())
	}
	used := filepath.Join(dir, "used.prof")
	if o, err = Create(used, false); err != nil {
		t.Fatal(err)
	}
	if _, err := o.WriteString("profile"); err != nil {
		t.Fatal(err)
	}
	o.Finish(true, &said, "--cpuprofile")
	if b, err := os.ReadFile(used); err != nil || string(b) != "profile" || said.Len() != 0 {
		t.Errorf("used: %q, %v, said %q; want the file", b, err, said.String())
	}
	late := filepath.Join(dir, "late.prof")
	if o, err = Create(late, false); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(late, []byte("someone else's"), 0o644); err != nil {
		t.Fatal(err)
	}
	o.Finish(true, &said, "--cpuprofile")
	if !strings.HasPrefix(said.String(), "ratelab: --cpuprofile: ") || !strings.Contains(said.String(), "already exists") {
		t.Errorf("a failed close said %q; want it named --cpuprofile", said.String())
	}
}
