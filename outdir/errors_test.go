package outdir

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/ratelab/ratelab/field"
)

// Join keeps both errors' messages and what errors.Is/As find; Split gives
// them back apart, and a lone error is itself.
func TestJoinSplit(t *testing.T) {
	run := errors.New("calls keep failing")
	werr := field.Errorf("out", "%w", fs.ErrPermission)
	both := Join(run, werr)
	if want := run.Error() + "\n" + werr.Error(); both.Error() != want {
		t.Errorf("message %q, want %q", both, want)
	}
	if !errors.Is(both, run) || !errors.Is(both, fs.ErrPermission) {
		t.Errorf("errors.Is misses a part of %v", both)
	}
	if name, _ := field.Name(both); name != "out" {
		t.Errorf("field %q, want out", name)
	}
	if r, w := Split(both); r != run || w != werr {
		t.Errorf("Split(both) = %v, %v", r, w)
	}
	if Join(run, nil) != run {
		t.Error("Join(run, nil) is not run")
	}
	if r, w := Split(Join(nil, werr)); r != nil || w != werr {
		t.Errorf("Split(write alone) = %v, %v", r, w)
	}
	joined := errors.Join(run, errors.New("write decisions.jsonl: disk full"))
	if r, w := Split(joined); r != joined || w != nil {
		t.Errorf("Split(run alone) = %v, %v", r, w)
	}
}
