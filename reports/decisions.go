package reports

import (
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/measure"
)

// Decisions is where a command's decisions go: the --decisions choice.
type Decisions string

// The choices of Decisions.
const (
	// DecisionsJSONL writes decisions.jsonl (the default).
	DecisionsJSONL Decisions = "jsonl"
	// DecisionsGzip writes decisions.jsonl.gz: about a tenth of the size.
	DecisionsGzip Decisions = "gz"
	// DecisionsNone keeps no decisions (results.json and the reports are
	// still written).
	DecisionsNone Decisions = "none"
)

// GzipDecisionFile is the name of the compressed decision log.
const GzipDecisionFile = "decisions.jsonl.gz"

// ParseDecisions reads a Decisions: "jsonl" (or "true"; "" is the
// default, jsonl), "gz", "none" (or "false"). Anything else is a
// *field.Error naming "decisions".
func ParseDecisions(s string) (Decisions, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "jsonl", "true", "on", "yes":
		return DecisionsJSONL, nil
	case "gz", "gzip":
		return DecisionsGzip, nil
	case "none", "false", "off", "no":
		return DecisionsNone, nil
	}
	return "", field.Errorf("decisions", "want jsonl, gz or none (false), got %q", s)
}

// OpenDecisionLog is CreateDecisionLog for d: decisions.jsonl, or
// decisions.jsonl.gz (closed, and its gzip stream ended, by the log's
// Close), or a log that discards every record. An earlier log of the
// other form in dir is removed. Errors are *field.Error naming "out".
func OpenDecisionLog(dir string, d Decisions) (*measure.DecisionLog, error) {
	switch d {
	case DecisionsGzip:
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, field.Errorf("out", "%w", err)
		}
		_ = os.Remove(filepath.Join(dir, "decisions.jsonl")) // an earlier run's: --force replaces
		f, err := os.Create(filepath.Join(dir, GzipDecisionFile))
		if err != nil {
			return nil, field.Errorf("out", "%w", err)
		}
		return measure.NewDecisionLog(&gzipFile{Writer: gzip.NewWriter(f), f: f}), nil
	case DecisionsNone:
		return measure.NewDecisionLog(nil), nil
	}
	log, err := CreateDecisionLog(dir)
	if err == nil {
		_ = os.Remove(filepath.Join(dir, GzipDecisionFile)) // an earlier run's: --force replaces
	}
	return log, err
}

// gzipFile is a gzip stream into a file; Close ends the stream, then
// closes the file.
type gzipFile struct {
	*gzip.Writer
	f *os.File
}

func (g *gzipFile) Close() error {
	return errors.Join(g.Writer.Close(), g.f.Close())
}
