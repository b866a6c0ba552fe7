package scenarios

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// readAll reads every record of src with o; it fails the test on an error
// other than io.EOF.
func readAll(t *testing.T, src string, o TrafficOptions) ([]TrafficRecord, TrafficStats) {
	t.Helper()
	r, err := NewTrafficReader(strings.NewReader(src), o)
	if err != nil {
		t.Fatalf("NewTrafficReader: %v", err)
	}
	var recs []TrafficRecord
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return recs, r.Stats()
		}
		if err != nil {
			t.Fatalf("Next after %d records: %v", len(recs), err)
		}
		recs = append(recs, rec)
	}
}

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// rec is a record for comparisons: time as an offset from t0.
type rec struct {
	at   time.Duration
	key  string
	cost int64
	line int64
}

func recsOf(rs []TrafficRecord) []rec {
	out := make([]rec, len(rs))
	for i, r := range rs {
		out[i] = rec{r.Time.Sub(t0), r.Key, r.Cost, r.Line}
	}
	return out
}

func TestTrafficFormats(t *testing.T) {
	const ms = time.Millisecond
	cases := []struct {
		name   string
		src    string
		o      TrafficOptions
		format TrafficFormat
		want   []rec
	}{
		{
			// CSV with the default columns, RFC 3339, a missing cost is 1
			name: "csv rfc3339",
			src:  "timestamp,key,cost\n2024-05-01T12:00:00Z,a,2\n2024-05-01 12:00:00.5Z,b,\n",
			want: []rec{{0, "a", 2, 2}, {500 * ms, "b", 1, 3}}, format: FormatCSV,
		},
		{
			// named columns in another order, quoted fields, CRLF, no cost column
			name: "csv named columns",
			src:  "user,extra,ts\r\n\"a,\"\"b\"\"\",x,1714564800\r\n\r\nc,y,1714564801.25\r\n",
			o:    TrafficOptions{Format: FormatCSV, TimeField: "ts", KeyField: "user"},
			want: []rec{{0, `a,"b"`, 1, 2}, {1250 * ms, "c", 1, 4}}, format: FormatCSV,
		},
		{
			// Unix times by magnitude: s, ms, µs, ns
			name: "csv magnitudes",
			src:  "timestamp,key\n1714564800,s\n1714564800001,ms\n1714564800000002,us\n1714564800000000003,ns\n",
			want: []rec{{0, "s", 1, 2}, {3, "ns", 1, 5}, {2 * time.Microsecond, "us", 1, 4}, {ms, "ms", 1, 3}}, format: FormatCSV,
		},
		{
			// a forced unit: small numbers are milliseconds
			name: "csv forced ms",
			src:  "timestamp,key\n1714564800000,a\n1714564800500.5,b\n",
			o:    TrafficOptions{TimeUnit: UnitMillis},
			want: []rec{{0, "a", 1, 2}, {500*ms + 500*time.Microsecond, "b", 1, 3}}, format: FormatCSV,
		},
		{
			// JSON Lines: nested fields, numbers and strings, null cost
			name: "jsonl",
			src: `{"ts": 1714564800.5, "client": {"ip": "10.0.0.1"}, "w": 3}` + "\n" +
				`{"ts": "2024-05-01T12:00:01+00:00", "client": {"ip": 7}, "w": null}` + "\n",
			o:    TrafficOptions{TimeField: "ts", KeyField: "client.ip", CostField: "w"},
			want: []rec{{500 * ms, "10.0.0.1", 3, 1}, {time.Second, "7", 1, 2}}, format: FormatJSONL,
		},
		{
			// combined and common lines, an Apache-escaped quote, a time zone
			name: "access log",
			src: `10.0.0.1 - alice [01/May/2024:12:00:00 +0000] "GET /a?x=1 HTTP/1.1" 200 512 "-" "curl/8 \"q\""` + "\n" +
				`10.0.0.2 - - [01/May/2024:14:00:01 +0200] "POST /b HTTP/1.1" 404 -` + "\n",
			want: []rec{{0, "10.0.0.1", 1, 1}, {time.Second, "10.0.0.2", 1, 2}}, format: FormatAccessLog,
		},
		{
			// the request path as key, cost from the bytes sent
			name: "access log path",
			src:  `10.0.0.1 - - [01/May/2024:12:00:00 +0000] "GET /a?x=1 HTTP/1.1" 200 512 "-" "curl/8" "203.0.113.9"` + "\n",
			o:    TrafficOptions{KeyField: "path", CostField: "body_bytes_sent"},
			want: []rec{{0, "/a", 512, 1}}, format: FormatAccessLog,
		},
		{
			// an extra field after the user agent (X-Forwarded-For) as key
			name: "access log extra",
			src:  `10.0.0.1 - - [01/May/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8" "203.0.113.9"` + "\n",
			o:    TrafficOptions{Format: FormatAccessLog, KeyField: "extra1"},
			want: []rec{{0, "203.0.113.9", 1, 1}}, format: FormatAccessLog,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs, st := readAll(t, c.src, c.o)
			if st.Malformed != 0 {
				t.Errorf("malformed %d: %v", st.Malformed, st.Examples)
			}
			if st.Format != c.format {
				t.Errorf("format %q, want %q", st.Format, c.format)
			}
			got := recsOf(recs)
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("records\n got %v\nwant %v", got, c.want)
			}
		})
	}
}

func TestParseTimeUnits(t *testing.T) {
	cases := []struct {
		s    string
		unit TimeUnit
		want int64 // Unix ns
		bad  bool
	}{
		{"0", UnitAuto, 0, false},
		{"9000000000", UnitAuto, 9000000000e9, false},     // < 1e11: seconds
		{"99999999999", UnitAuto, 0, true},                // seconds, but past 2262
		{"100000000000", UnitAuto, 100000000000e6, false}, // 1e11: milliseconds
		{"100000000000000", UnitAuto, 1e14 * 1e3, false},  // 1e14: microseconds
		{"100000000000000000", UnitAuto, 1e17, false},     // 1e17: nanoseconds
		{"-1.5", UnitAuto, -1_500_000_000, false},         // before the epoch
		{"1.7e9", UnitAuto, 1_700_000_000e9, false},       // exponent form
		{"1714564800.123456789123", UnitSeconds, 1714564800123456789, false},
		{"5", UnitMicros, 5000, false},
		{"5.5", UnitNanos, 0, true},                    // no fraction of a ns
		{"2024-05-01T12:00:00Z", UnitSeconds, 0, true}, // forced unit
		{"1714564800", UnitRFC3339, 0, true},           // forced RFC 3339
		{"99999999999999999999", UnitAuto, 0, true},    // out of int64
		{"9999999999", UnitMillis, 9999999999e6, false},
		{"9999999999999", UnitSeconds, 0, true}, // past 2262
		{"", UnitAuto, 0, true},
		{"yesterday", UnitAuto, 0, true},
	}
	for _, c := range cases {
		got, err := parseTime(c.s, c.unit)
		if c.bad {
			if err == nil {
				t.Errorf("parseTime(%q, %s) = %v, want an error", c.s, c.unit, got)
			}
			continue
		}
		if err != nil || got.UnixNano() != c.want {
			t.Errorf("parseTime(%q, %s) = %d, %v; want %d", c.s, c.unit, got.UnixNano(), err, c.want)
		}
	}
}

// TestMalformedLines: bad lines are counted with their line numbers and
// reasons, reading goes on, and Strict stops at the first.
func TestMalformedLines(t *testing.T) {
	src := "timestamp,key,cost\n" +
		"2024-05-01T12:00:00Z,a,1\n" + // 2 ok
		"yesterday,a,1\n" + // 3 bad time
		"2024-05-01T12:00:01Z,,1\n" + // 4 empty key
		"2024-05-01T12:00:02Z,a,0\n" + // 5 bad cost
		"2024-05-01T12:00:03Z,a\n" + // 6 columns
		"2024-05-01T12:00:04Z,\"a,1\n" + // 7 quote not closed
		"2024-05-01T12:00:05Z,a,-3\n" + // 8 bad cost (not kept: MaxExamples 5)
		"2024-05-01T12:00:06Z,b,2\n" // 9 ok
	recs, st := readAll(t, src, TrafficOptions{})
	if got := recsOf(recs); fmt.Sprint(got) != fmt.Sprint([]rec{{0, "a", 1, 2}, {6 * time.Second, "b", 2, 9}}) {
		t.Errorf("records %v", got)
	}
	if st.Lines != 9 || st.Records != 2 || st.Malformed != 6 || len(st.Examples) != 5 {
		t.Errorf("stats %+v", st)
	}
	wantLines := []int64{3, 4, 5, 6, 7}
	wantReason := []string{`bad time "yesterday"`, "empty key", `bad cost "0"`, "2 columns, the header has 3", "quoted field not closed"}
	for i, e := range st.Examples {
		if e.Line != wantLines[i] || !strings.Contains(e.Reason, wantReason[i]) {
			t.Errorf("example %d: %v, want line %d containing %q", i, e.Error(), wantLines[i], wantReason[i])
		}
	}

	r, err := NewTrafficReader(strings.NewReader(src), TrafficOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	// The error comes as soon as line 3 is read, before line 2's record
	// (held for reordering) is given out.
	_, err = r.Next()
	var le *LineError
	if !errors.As(err, &le) || le.Line != 3 || !strings.HasPrefix(err.Error(), `line 3: bad time "yesterday"`) {
		t.Errorf("strict: got %v, want a LineError at line 3", err)
	}
	if _, err2 := r.Next(); err2 != err {
		t.Errorf("after a strict error Next returned %v", err2)
	}
}

func TestEmptyAndNoRecords(t *testing.T) {
	cases := []struct {
		name, src string
		o         TrafficOptions
		atNew     bool // the error comes from NewTrafficReader
		want      error
		text      string
	}{
		{"empty", "", TrafficOptions{}, true, ErrEmptyTraffic, "traffic file is empty"},
		{"blank lines", "\n \n\r\n", TrafficOptions{}, true, ErrEmptyTraffic, "traffic file is empty"},
		{"empty jsonl", "", TrafficOptions{Format: FormatJSONL}, true, ErrEmptyTraffic, "empty"},
		{"blank jsonl", "\n\n", TrafficOptions{Format: FormatJSONL}, false, ErrEmptyTraffic, "empty"},
		{"header only", "timestamp,key\n", TrafficOptions{}, false, ErrNoRecords, "only a header line"},
		{"all malformed", "timestamp,key\nx,a\ny,b\n", TrafficOptions{}, false, ErrNoRecords, `all 2 lines malformed (first: line 2: bad time "x"`},
		{"no time column", "when,key\n1,a\n", TrafficOptions{}, true, nil, `csv header (line 1) has no time column "timestamp" (columns: "when", "key")`}, // "time" alone is taken (TestTimeColumnByName)
		{"no cost column", "timestamp,key\n1,a\n", TrafficOptions{CostField: "w"}, true, nil, `no cost column "w"`},
		{"bad key field", "1.2.3.4 - - [01/May/2024:12:00:00 +0000] \"GET / HTTP/1.1\" 200 1\n", TrafficOptions{KeyField: "host"}, true, nil, `key field "host": access logs take remote_addr`},
		{"bad unit", "", TrafficOptions{TimeUnit: "min"}, true, nil, `time unit "min"`},
	}
	for _, c := range cases {
		r, err := NewTrafficReader(strings.NewReader(c.src), c.o)
		if !c.atNew {
			if err != nil {
				t.Errorf("%s: NewTrafficReader: %v", c.name, err)
				continue
			}
			_, err = r.Next()
		}
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: got %v, want %v containing %q", c.name, err, c.want, c.text)
		}
	}
}

func TestGzip(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	fmt.Fprint(zw, "timestamp,key\n1714564800,a\n1714564801,b\n")
	zw.Close()
	recs, st := readAll(t, buf.String(), TrafficOptions{})
	if !st.Gzip || st.Format != FormatCSV || len(recs) != 2 || recs[1].Key != "b" || recs[1].Line != 3 {
		t.Errorf("gzip: %+v %v", st, recs)
	}
	// a truncated gzip stream is a read error, not a silent end
	r, err := NewTrafficReader(bytes.NewReader(buf.Bytes()[:buf.Len()-6]), TrafficOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = r.Next()
	}
	if errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "unexpected") {
		t.Errorf("truncated gzip: got %v, want a read error", err)
	}
	// an empty gzip stream is an empty file
	buf.Reset()
	zw = gzip.NewWriter(&buf)
	zw.Close()
	if _, err := NewTrafficReader(&buf, TrafficOptions{}); !errors.Is(err, ErrEmptyTraffic) {
		t.Errorf("empty gzip: %v", err)
	}
}

// TestReorder: records late by less than the reorder window are put in
// order; later ones are malformed; a negative window requires sorted times.
func TestReorder(t *testing.T) {
	src := "timestamp,key\n10,a\n12,b\n11,c\n20,d\n11.5,e\n20,f\n"
	recs, st := readAll(t, src, TrafficOptions{ReorderWindow: 3 * time.Second})
	var keys string
	for _, r := range recs {
		keys += r.Key
	}
	// e (11.5) comes after d (20): 8.5s late, beyond 3s, and 12 was given out
	if keys != "acbdf" || st.OutOfOrder != 1 || st.Malformed != 1 || st.Examples[0].Line != 6 ||
		!strings.Contains(st.Examples[0].Reason, "out of order") {
		t.Errorf("keys %q stats %+v", keys, st)
	}
	_, st = readAll(t, src, TrafficOptions{ReorderWindow: -1})
	if st.OutOfOrder != 2 || st.Records != 4 {
		t.Errorf("no reordering: %+v", st)
	}
	// MaxReorder bounds what is held: with 1, nothing is reordered
	_, st = readAll(t, src, TrafficOptions{MaxReorder: 1})
	if st.OutOfOrder != 2 {
		t.Errorf("MaxReorder 1: %+v", st)
	}
}

func TestLongLine(t *testing.T) {
	src := "timestamp,key\n1," + strings.Repeat("k", 300) + "\n2,b\n"
	recs, st := readAll(t, src, TrafficOptions{MaxLineBytes: 100})
	if len(recs) != 1 || recs[0].Key != "b" || recs[0].Line != 3 || st.Malformed != 1 || st.Examples[0].Line != 2 {
		t.Errorf("recs %v stats %+v", recs, st)
	}
}

func TestArrivalStream(t *testing.T) {
	src := "timestamp,key,cost\n1714564807.5,b,1\n1714564809,a,2\n1714564811,b,3\n"
	r, err := NewTrafficReader(strings.NewReader(src), TrafficOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, anchor, err := ReadTrafficSchedule(r, "trace", Params{Limit: 5, Window: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !anchor.Equal(time.Unix(1714564800, 0)) {
		t.Errorf("anchor %v", anchor)
	}
	want := []Arrival{{7500 * time.Millisecond, "b", 1, 0}, {9 * time.Second, "a", 2, 1}, {11 * time.Second, "b", 3, 0}}
	if fmt.Sprint(s.Arrivals) != fmt.Sprint(want) || s.Scenario != "trace" {
		t.Errorf("schedule %+v", s)
	}
	r, _ = NewTrafficReader(strings.NewReader(src), TrafficOptions{})
	if _, _, err := ReadTrafficSchedule(r, "trace", Params{Limit: 2, Window: time.Second}); err == nil || err.Error() != "line 4: cost 3 is above the limit 2" {
		t.Errorf("cost above limit: %v", err)
	}
	if _, err := NewArrivalStream(r, 0); err == nil {
		t.Error("window 0 accepted")
	}
	if got := alignDown(time.Unix(-5, 0), 10*time.Second); !got.Equal(time.Unix(-10, 0)) {
		t.Errorf("alignDown(-5s) = %v", got.Unix())
	}
}

// Replay reads through ArrivalStream. Cost replaces every
// record's cost; a record above Limit is a *LineError naming its line, its
// key takes no client number, and the stream goes on.
func TestArrivalStreamCostLimit(t *testing.T) {
	src := "timestamp,key,cost\n1714564807.5,b,1\n1714564809,a,3\n1714564811,c,2\n1714564812,a,1\n"
	cases := []struct {
		name        string
		cost, limit int64
		want        string // arrivals and errors, in order
	}{
		// a's 3 is skipped: c is client 1, a client 2
		{"limit", 0, 2, "{7.5s b 1 0} line 3: cost 3 is above the limit 2 {11s c 2 1} {12s a 1 2} EOF"},
		// every cost replaced, so none is above the limit
		{"cost", 2, 2, "{7.5s b 2 0} {9s a 2 1} {11s c 2 2} {12s a 2 1} EOF"},
		{"cost above", 3, 2, "line 2: cost 3 is above the limit 2 line 3: cost 3 is above the limit 2 line 4: cost 3 is above the limit 2 line 5: cost 3 is above the limit 2 EOF"},
		{"no limit", 0, 0, "{7.5s b 1 0} {9s a 3 1} {11s c 2 2} {12s a 1 1} EOF"},
	}
	for _, c := range cases {
		r, err := NewTrafficReader(strings.NewReader(src), TrafficOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewArrivalStream(r, 10*time.Second)
		s.Cost, s.Limit = c.cost, c.limit
		var got []string
		for {
			a, err := s.Next()
			if err == io.EOF {
				got = append(got, "EOF")
				break
			}
			if err != nil {
				var le *LineError
				if !errors.As(err, &le) {
					t.Fatalf("%s: %v", c.name, err)
				}
				got = append(got, err.Error())
				continue
			}
			got = append(got, fmt.Sprint(a))
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("%s: got\n%s\nwant\n%s", c.name, g, c.want)
		}
	}
}

// TestGeneratedLog: the generator is deterministic, and the reader reads
// all of it, in order, with the documented keys.
func TestGeneratedLog(t *testing.T) {
	o := GenOptions{Lines: 20_000, Keys: 500, Duration: time.Hour, Disorder: 2 * time.Second, Seed: 3}
	var a, b bytes.Buffer
	if err := GenerateAccessLog(&a, o); err != nil {
		t.Fatal(err)
	}
	GenerateAccessLog(&b, o)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two runs with the same options differ")
	}
	r, err := NewTrafficReader(&a, TrafficOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewArrivalStream(r, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	n, heavy, inBurst := 0, 0, 0
	var last time.Duration
	for {
		arr, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if arr.At < last {
			t.Fatalf("arrival %d at %v before %v", n, arr.At, last)
		}
		last = arr.At
		n++
		if strings.HasPrefix(arr.Key, "203.0.113.") {
			heavy++
		}
		if strings.HasPrefix(arr.Key, "198.51.") && arr.At%time.Minute < 3*time.Second {
			inBurst++
		}
	}
	if a := s.Anchor(); a.IsZero() || a.UnixNano()%int64(time.Minute) != 0 {
		t.Errorf("anchor %v: want a whole minute", a)
	}
	st := r.Stats()
	if n != o.Lines || st.Malformed != 0 || st.Format != FormatAccessLog || s.Clients() > o.Keys || s.Clients() < o.Keys*9/10 {
		t.Errorf("read %d of %d, stats %+v, %d clients", n, o.Lines, st, s.Clients())
	}
	if heavy < n/6 || heavy > n/4 || inBurst < n/12 || inBurst > n/8 {
		t.Errorf("heavy %d and cron-burst %d of %d: want about 18%% and 10%%", heavy, inBurst, n)
	}
	if err := GenerateAccessLog(io.Discard, GenOptions{Keys: 10, CronKeys: 10}); err == nil {
		t.Error("keys <= heavy + cron accepted")
	}
}

// TestBigLogMemory streams the default 10^6-line generated log (gzip) from a
// pipe through the reader and reports lines/s and peak heap; the heap must
// stay bounded. It takes a few seconds: run with RATELAB_BIG=1.
func TestBigLogMemory(t *testing.T) {
	if os.Getenv("RATELAB_BIG") == "" {
		t.Skip("set RATELAB_BIG=1 to stream a generated 10^6-line log")
	}
	pr, pw := io.Pipe()
	go func() {
		zw := gzip.NewWriter(pw)
		err := GenerateAccessLog(zw, GenOptions{Disorder: time.Second, Seed: 1})
		if err == nil {
			err = zw.Close()
		}
		pw.CloseWithError(err)
	}()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak uint64
	start := time.Now()
	r, err := NewTrafficReader(pr, TrafficOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := NewArrivalStream(r, time.Minute)
	n := 0
	for {
		_, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if n++; n%50_000 == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}
	el := time.Since(start)
	st := r.Stats()
	t.Logf("%d lines (gzip, generated in a goroutine) in %v: %.0f lines/s; peak heap %.1f MiB over a base of %.1f MiB; %d clients; %d malformed",
		n, el.Round(time.Millisecond), float64(n)/el.Seconds(), float64(peak)/(1<<20), float64(base)/(1<<20), s.Clients(), st.Malformed)
	if n != 1_000_000 || st.Malformed != 0 {
		t.Errorf("read %d lines, %d malformed", n, st.Malformed)
	}
	if peak-base > 64<<20 {
		t.Errorf("peak heap grew by %d MiB: not bounded", (peak-base)>>20)
	}
}

// BenchmarkTrafficReader measures the access-log reader on a generated log
// held in memory.
func BenchmarkTrafficReader(b *testing.B) {
	var buf bytes.Buffer
	GenerateAccessLog(&buf, GenOptions{Lines: 100_000, Seed: 1})
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := NewTrafficReader(bytes.NewReader(buf.Bytes()), TrafficOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
	b.ReportMetric(float64(b.N)*100_000/b.Elapsed().Seconds(), "lines/s")
}

func FuzzAccessLine(f *testing.F) {
	f.Add([]byte(`10.0.0.1 - alice [01/May/2024:12:00:00 +0000] "GET /a?x=1 HTTP/1.1" 200 512 "-" "curl/8 \"q\"" "x"`))
	f.Add([]byte(`10.0.0.2 - - [01/May/2024:14:00:01 +0200] "POST /b HTTP/1.1" 404 -`))
	f.Add([]byte(`::1 - - [x] "\\" 200 1 "" ""`))
	f.Fuzz(func(t *testing.T, line []byte) {
		a, err := parseAccessLine(line)
		if err != nil {
			return
		}
		for _, k := range append(accessKeyFields, "extra1") {
			_, _ = accessKey(&a, k, 1)
		}
	})
}

// FuzzTrafficReader: any input in any format ends in EOF or an error, never
// a panic, and the counts add up.
func FuzzTrafficReader(f *testing.F) {
	f.Add([]byte("timestamp,key,cost\n2024-05-01T12:00:00Z,a,2\n1714564800,\"b\"\"\",\n"), uint8(0))
	f.Add([]byte(`{"timestamp": 1714564800.5, "key": "a", "cost": 3}`+"\n{}\n"), uint8(2))
	f.Add([]byte(`10.0.0.1 - - [01/May/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "c"`+"\n"), uint8(3))
	f.Add([]byte{0x1f, 0x8b, 0, 0}, uint8(0))
	formats := []TrafficFormat{FormatAuto, FormatCSV, FormatJSONL, FormatAccessLog}
	f.Fuzz(func(t *testing.T, data []byte, sel uint8) {
		o := TrafficOptions{Format: formats[int(sel)%len(formats)], MaxLineBytes: 256, MaxReorder: 8}
		if sel&4 != 0 {
			o.ReorderWindow = -1
		}
		r, err := NewTrafficReader(bytes.NewReader(data), o)
		if err != nil {
			return
		}
		var last time.Time
		for i := 0; ; i++ {
			rec, err := r.Next()
			if err != nil {
				break
			}
			if rec.Key == "" || rec.Cost < 1 || rec.Line < 1 || i > 0 && rec.Time.Before(last) {
				t.Fatalf("bad record %+v after %v", rec, last)
			}
			last = rec.Time
		}
		if st := r.Stats(); st.Records+st.Malformed > st.Lines || len(st.Examples) > DefaultMaxExamples {
			t.Fatalf("stats %+v", st)
		}
	})
}
