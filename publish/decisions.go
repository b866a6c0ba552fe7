package publish

import (
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
)

// The decision file (--decisions): every decision of a command, in the
// encoding reports.NewCompactEncoder writes or as JSON lines, compressed
// as its name says (see reports' decisions.go for the format).

// DecisionFileFormat says how a decision file named path is written: json
// (JSON lines) or not (the compact encoding), and its compression: "gzip",
// "zstd" or "" (none), from the name's last extensions.
func DecisionFileFormat(path string) (json bool, compression string) {
	name := strings.ToLower(filepath.Base(path))
	switch {
	case strings.HasSuffix(name, ".gz"):
		compression, name = "gzip", strings.TrimSuffix(name, ".gz")
	case strings.HasSuffix(name, ".zst"):
		compression, name = "zstd", strings.TrimSuffix(name, ".zst")
	}
	return strings.HasSuffix(name, ".jsonl"), compression
}

// CreateDecisionFile creates the decision file path (its directory must
// exist), replacing an earlier one, and returns the log that writes it in
// the encoding and compression its name says (DecisionFileFormat). The
// caller closes the log: closing ends the compressed stream. Errors are
// *field.Error naming "decisions".
func CreateDecisionFile(path string) (*measure.DecisionLog, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, field.Errorf("decisions", "%w", err)
	}
	asJSON, compression := DecisionFileFormat(path)
	var w io.Writer = f
	switch compression {
	case "gzip":
		w = &compressed{w: gzip.NewWriter(f), file: f}
	case "zstd":
		z, err := zstd.NewWriter(f, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
		if err != nil {
			_ = f.Close() // the encoder's error is the one to report
			return nil, field.Errorf("decisions", "%w", err)
		}
		w = &compressed{w: z, file: f}
	}
	if asJSON {
		return measure.NewDecisionLog(w), nil
	}
	return measure.NewDecisionLogEncoded(w, reports.NewCompactEncoder()), nil
}

// compressor is what gzip.Writer and zstd.Encoder have in common.
type compressor interface {
	io.WriteCloser
	Flush() error
}

// compressed is a compressor writing to a file: Flush ends a block, Close
// ends the stream and closes the file.
type compressed struct {
	w    compressor
	file *os.File
}

func (c *compressed) Write(p []byte) (int, error) { return c.w.Write(p) }

func (c *compressed) Flush() error { return c.w.Flush() }

func (c *compressed) Close() error {
	return errors.Join(c.w.Close(), c.file.Close())
}
