package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/measure"
	"github.com/spf13/cobra"
)

// --decisions: none gives run a nil log; a file that cannot be made is an
// error naming the flag and run is not called; run's error wins over the
// log's, and the records reach the file.
func TestLogDecisions(t *testing.T) {
	err := outFlags{}.logDecisions(func(log *measure.DecisionLog) error {
		if log != nil {
			t.Error("no --decisions: got a log")
		}
		return errors.New("ran")
	})
	if err == nil || err.Error() != "ran" {
		t.Errorf("no --decisions: %v; want run's error alone", err)
	}
	var o outFlags
	o.addDecisions(&cobra.Command{})
	o.decisions = filepath.Join(t.TempDir(), "missing", "d.jsonl")
	called := false
	err = o.logDecisions(func(*measure.DecisionLog) error { called = true; return nil })
	if called || err == nil || !strings.HasPrefix(err.Error(), "--decisions: ") {
		t.Errorf("missing directory: called %v, %v; want an error naming --decisions, run not called", called, err)
	}
	path := filepath.Join(t.TempDir(), "d.jsonl")
	stop := errors.New("stop")
	err = outFlags{decisions: path}.logDecisions(func(log *measure.DecisionLog) error {
		for i := range 3 {
			if err := log.Write(&measure.Record{Algorithm: "sliding-log", Scenario: "steady", Key: "k", Cost: 1, AtUS: int64(i)}); err != nil {
				return err
			}
		}
		return stop
	})
	b, rerr := os.ReadFile(path)
	if !errors.Is(err, stop) || rerr != nil || strings.Count(string(b), "\n") != 3 {
		t.Errorf("got %v, %d lines (%v); want stop and 3 records in the file", err, strings.Count(string(b), "\n"), rerr)
	}
}
