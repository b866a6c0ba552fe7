package scenarios

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	fielderr "github.com/ratelab/ratelab/field"
)

func TestOpenTraffic(t *testing.T) {
	dir := t.TempDir()
	full, empty := filepath.Join(dir, "t.csv"), filepath.Join(dir, "empty.csv")
	if err := os.WriteFile(full, []byte("timestamp,key\n1,a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, size, err := OpenTraffic(full)
	if err != nil || size != 18 {
		t.Fatalf("OpenTraffic(%s) = %d, %v", full, size, err)
	}
	_ = f.Close() // read only
	for _, path := range []string{filepath.Join(dir, "missing.csv"), dir, empty} {
		_, _, err := OpenTraffic(path)
		if name, _ := fielderr.Name(err); name != "traffic" {
			t.Errorf("%s: error %v, want one naming traffic", path, err)
		}
	}
	if _, _, err := OpenTraffic(empty); !errors.Is(err, ErrEmptyTraffic) {
		t.Errorf("empty file: %v, want ErrEmptyTraffic", err)
	}
}

// A pipe (here /dev/stdin's stand-in, an os.Pipe) is read as it comes:
// size -1, not refused as empty before it is read; "-" is standard input.
func TestOpenTrafficStream(t *testing.T) {
	f, size, err := OpenTraffic(StdinPath)
	if err != nil || f != os.Stdin || size != -1 {
		t.Errorf("OpenTraffic(-) = %v, %d, %v; want os.Stdin, -1", f, size, err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		_, _ = w.WriteString("ts,key\n1732240000000,a\n1732240000500,b\n")
		_ = w.Close()
	}()
	path := "/dev/fd/" + strconv.Itoa(int(r.Fd()))
	pf, size, err := OpenTraffic(path)
	if err != nil || size != -1 {
		t.Fatalf("OpenTraffic(%s) = %d, %v; want a stream of unknown size", path, size, err)
	}
	defer pf.Close()
	tr, err := NewTrafficReader(pf, TrafficOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		if _, err := tr.Next(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("record %d: %v", n+1, err)
			}
			break
		}
		n++
	}
	if n != 2 {
		t.Errorf("%d records from the pipe, want 2", n)
	}
}

// The time column is found by name when exactly one column looks like
// one; none or two of them, and the error lists the columns.
func TestTimeColumnByName(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       int64 // the first record's time, Unix ms; 0: an error
		err        string
	}{
		{"timestamp_ms", "timestamp_ms,key\n1732240000123,a\n", 1732240000123, ""},
		{"ts", "key,ts\na,1732240000\n", 1732240000000, ""},
		{"time", "time,key,cost\n1732240000.5,a,2\n", 1732240000500, ""},
		{"@timestamp", "@timestamp,key\n1732240000123456,a\n", 1732240000123, ""},
		{"timestamp wins", "timestamp,ts,key\n1732240000,5,a\n", 1732240000000, ""},
		{"two candidates", "ts,time,key\n1,2,a\n", 0, `no time column "timestamp" (columns: "ts", "time", "key")`},
		{"none", "when,key\n1,a\n", 0, `no time column "timestamp"`},
		{"jsonl ts", `{"ts": 1732240000123, "key": "a"}` + "\n", 1732240000123, ""},
		{"jsonl @timestamp", `{"@timestamp": 1732240000, "key": "a"}` + "\n", 1732240000000, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := NewTrafficReader(strings.NewReader(c.text), TrafficOptions{Strict: true})
			var rec TrafficRecord
			if err == nil {
				rec, err = tr.Next()
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := rec.Time.UnixMilli(); got != c.want {
				t.Errorf("time %d ms, want %d", got, c.want)
			}
		})
	}
}

// A scenario file on standard input: "-".
func TestLoadScenarioFileStdin(t *testing.T) {
	src, err := BuiltinYAML("steady")
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = w.Write(src)
		_ = w.Close()
	}()
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old; _ = r.Close() }()
	sc, err := LoadScenarioFile(StdinPath)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "steady" || sc.Build == nil {
		t.Errorf("scenario from stdin: %q", sc.Name)
	}
}
