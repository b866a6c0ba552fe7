package measure

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/limit"
)

// The Header is flattened into every result's JSON: one "complete", one
// "schema_version" at the top, never a nested "Header".
func TestHeaderFlattened(t *testing.T) {
	h := Header{SchemaVersion: SchemaVersion, Tool: "ratelab", ToolVersion: "v1", Command: "x", RunID: "r1",
		StartedAt: time.Date(2026, 11, 24, 19, 0, 0, 0, time.UTC), DurationMS: 5, Complete: true,
		Repro: Repro{Seed: 7, Limits: []limit.Limit{{Count: 10, Window: time.Second}}}}
	for i, v := range []any{&Results{Header: h}, &BenchResults{Header: h}, &CapacityResults{Header: h}, &VerifyReport{Header: h}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(b, &top); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"schema_version", "tool_version", "run_id", "redis", "started_at", "duration_ms", "complete", "repro"} {
			if _, ok := top[k]; !ok {
				t.Errorf("case %d %T: no top-level %q in %s", i, v, k, b)
			}
		}
		if _, ok := top["Header"]; ok || strings.Contains(string(b), `"incomplete"`) {
			t.Errorf("case %d %T: %s", i, v, b)
		}
		if got := string(top["started_at"]); got != `"2026-11-24T19:00:00Z"` {
			t.Errorf("case %d: started_at %s, want RFC 3339 UTC", i, got)
		}
	}
}

// A verify.json of the first schema says "incomplete" (absent when it
// finished) and has no schema_version; both shapes read to the same Complete, and a file
// of a newer schema is refused.
func TestReadVerifyShapes(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, content string
		complete      bool
		err           string // "" for none
	}{
		{"old finished", `{"target":"sliding-log","verdict":"holds","duration_ms":12,"families":[]}`, true, ""},
		{"old stopped", `{"incomplete":true,"error":"redis gone","target":"x","families":null}`, false, ""},
		{"new finished", `{"schema_version":2,"command":"verify","complete":true,"families":[]}`, true, ""},
		{"new stopped", `{"schema_version":2,"command":"verify","complete":false,"error":"e","families":null}`, false, ""},
		{"newer schema", `{"schema_version":99,"complete":true,"families":[]}`, false, "schema_version 99 is newer"},
		{"not verify", `{"results":[]}`, false, `no "families" array`},
	}
	for i, c := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
		if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := ReadVerify(path)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("case %d %s: got %v, want an error saying %q", i, c.name, err, c.err)
			}
		case err != nil:
			t.Errorf("case %d %s: %v", i, c.name, err)
		case rep.Complete != c.complete:
			t.Errorf("case %d %s: Complete = %v, want %v", i, c.name, rep.Complete, c.complete)
		default:
			// written again and read back: the same Complete
			b, _ := json.Marshal(rep)
			var back VerifyReport
			if err := json.Unmarshal(b, &back); err != nil || back.Complete != c.complete {
				t.Errorf("case %d %s: rewritten %s reads back Complete = %v", i, c.name, b, back.Complete)
			}
		}
	}
	if rep, _ := ReadVerify(filepath.Join(dir, "old-finished.json")); rep == nil || rep.DurationMS != 12 || rep.Target != "sliding-log" {
		t.Errorf("old shape's fields: %+v", rep)
	}
}

// results.json of the previous shape (no schema_version, no run_id) still
// reads; a newer one is refused.
func TestReadResultsShapes(t *testing.T) {
	old := `{"tool":"ratelab","command":"run","config":{"seed":3},"redis":{"mode":"exec","addr":"a","version":"7.0.15"},
		"started_at":"2025-03-14T09:26:53Z","duration_ms":4210,"complete":true,"results":[]}`
	r, err := ParseResults([]byte(old), "old.json")
	if err != nil || !r.Complete || r.Redis.Version != "7.0.15" || r.DurationMS != 4210 || r.SchemaVersion != 0 || r.Config.Seed != 3 {
		t.Fatalf("old results.json: %v %+v", err, r)
	}
	if _, err := ParseResults([]byte(`{"schema_version":3,"results":[]}`), "new.json"); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("newer schema: %v", err)
	}
}
