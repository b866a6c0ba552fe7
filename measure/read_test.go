package measure

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// a results.json whose rows are not rows of its
// "command" is refused, naming the row, instead of rendering zeros.
func TestReadersRefuseRowsOfAnotherCommand(t *testing.T) {
	dir := t.TempDir()
	runRow := `{"algorithm":"sliding-log","scenario":"steady","limit":50}`
	capRow := `{"algorithm":"sliding-log","limit":100,"memory_bytes":5192}`
	benchRow := `{"algorithm":"sliding-log","path":"allow","decisions":10}`
	cases := []struct {
		name, content string
		read          func(string) error
		want          string // "" for no error
	}{
		{"run rows as run", `{"command":"run","results":[` + runRow + `]}`, readRun, ""},
		{"capacity rows under run", `{"command":"run","results":[` + capRow + `]}`, readRun, "results[0] is not a row of `ratelab run`"},
		{"bench rows without command", `{"results":[` + benchRow + `]}`, readRun, "results[0] is not a row of `ratelab run`"},
		{"capacity rows as capacity", `{"command":"capacity","results":[` + capRow + `]}`, readCapacity, ""},
		{"run rows under capacity", `{"command":"capacity","results":[` + runRow + `,{"algorithm":"x"}]}`, readCapacity, "results[1] is not a row of `ratelab capacity`"},
		{"bench rows as bench", `{"command":"bench","results":[` + benchRow + `]}`, readBench, ""},
		{"run rows under bench", `{"command":"bench","results":[` + runRow + `]}`, readBench, "results[0] is not a row of `ratelab bench`"},
	}
	for i, c := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
		if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		err := c.read(path)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("case %d %s: %v", i, c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("case %d %s: got %v, want an error saying %q", i, c.name, err, c.want)
		}
	}
}

func readRun(p string) error      { _, err := ReadResults(p); return err }
func readCapacity(p string) error { _, err := ReadCapacity(p); return err }
func readBench(p string) error    { _, err := ReadBench(p); return err }

// a bench row's throughput against redis-benchmark was
// keyed "ratio" (the word a run row uses for max_in_window / limit); it is
// now "vs_redis_benchmark", and a results.json of either shape reads.
func TestReadBenchVsRedisBenchmarkKeys(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, row string
		want      float64
	}{
		{"current key", `"vs_redis_benchmark":0.75`, 0.75},
		{"previous key", `"ratio":0.5`, 0.5},
		{"both: current wins", `"ratio":0.5,"vs_redis_benchmark":0.75`, 0.75},
		{"not compared", `"redis_benchmark_per_s":0`, 0},
	}
	for i, c := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
		content := `{"command":"bench","results":[{"algorithm":"sliding-log","path":"allow",` + c.row + `}]}`
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := ReadBench(path)
		if err != nil {
			t.Fatalf("case %d %s: %v", i, c.name, err)
		}
		if got := r.Results[0].VsRedisBenchmark; got != c.want {
			t.Errorf("case %d %s: VsRedisBenchmark = %v, want %v", i, c.name, got, c.want)
		}
	}
}
