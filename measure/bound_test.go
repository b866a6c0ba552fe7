package measure

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// forgedTrace is a verify.json whose counter-example's trace holds n
// requests, made as it is read (never held whole), with decisions before
// the trace and a field after it, as verify writes them. read counts the
// bytes handed out.
type forgedTrace struct {
	n, i int
	read int64
	buf  strings.Builder
	rest string
	done bool
}

func (f *forgedTrace) Read(p []byte) (int, error) {
	for len(f.rest) < len(p) && !f.done {
		f.buf.Reset()
		switch {
		case f.i == 0:
			f.buf.WriteString(`{"schema_version":2,"command":"verify","verdict":"violated","families":[{"family":"phases"}],` +
				`"counter_example":{"family":"phases","kind":"violated","accepted":11,"limit":10,` +
				`"decisions":[{"key":"user","cost":1,"at_us":1}],"trace":{"anchor_us":0,"window_ms":1000,"requests":[`)
		case f.i <= f.n:
			if f.i > 1 {
				f.buf.WriteByte(',')
			}
			fmt.Fprintf(&f.buf, `{"at_us":%d,"key":"user","cost":1,"client":0,"allowed":true}`, f.i)
		default:
			f.buf.WriteString(`],"shrunk":true,"minimal":true}},"decisions":12}`)
			f.done = true
		}
		f.i++
		f.rest += f.buf.String()
	}
	if len(f.rest) == 0 {
		return 0, io.EOF
	}
	n := copy(p, f.rest)
	f.rest = f.rest[n:]
	f.read += int64(n)
	return n, nil
}

// A forged verify.json of 2x10^6 trace requests (about 130 MB) is refused
// by its count: the reader stops just past MaxTraceRequests, having read
// about a twentieth of the file; a trace of MaxTraceRequests passes and
// is read to its end.
func TestCheckCountsStopsEarly(t *testing.T) {
	forged := &forgedTrace{n: 2_000_000}
	err := checkCounts(bufio.NewReader(forged))
	if !errors.Is(err, ErrTraceTooLong) {
		t.Fatalf("2x10^6 requests: got %v, want ErrTraceTooLong", err)
	}
	if perRequest := int64(64); forged.read > (MaxTraceRequests+10_000)*perRequest {
		t.Errorf("2x10^6 requests: read %d bytes before refusing, want the reading stopped just past request %d", forged.read, MaxTraceRequests)
	}
	t.Logf("refused after %d bytes: %v", forged.read, err)

	atBound := &forgedTrace{n: MaxTraceRequests}
	if err := checkCounts(bufio.NewReader(atBound)); err != nil {
		t.Fatalf("%d requests: %v", MaxTraceRequests, err)
	}
	if !atBound.done || atBound.rest != "" {
		t.Errorf("%d requests: the walk stopped before the end", MaxTraceRequests)
	}
}

// ReadVerify refuses the forged file on disk with ErrTraceTooLong, naming
// the file; the same file with a short trace reads whole.
func TestReadVerifyRefusesLongTrace(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, &forgedTrace{n: n}); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	long := write("long.json", MaxTraceRequests+1)
	if _, err := ReadVerify(long); !errors.Is(err, ErrTraceTooLong) || !strings.Contains(err.Error(), long) {
		t.Errorf("%d requests: got %v, want ErrTraceTooLong naming %s", MaxTraceRequests+1, err, long)
	}
	rep, err := ReadVerify(write("short.json", 12))
	if err != nil {
		t.Fatal(err)
	}
	if ce := rep.CounterExample; ce == nil || ce.Trace == nil || len(ce.Trace.Requests) != 12 || rep.Decisions != 12 {
		t.Errorf("12 requests: read %+v", rep.CounterExample)
	}
}
