package scenarios

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// TrafficFormat names the format of a traffic file.
type TrafficFormat string

// The traffic file formats.
const (
	// FormatAuto detects the format from the first non-blank line: a line
	// starting with '{' is JSON Lines, a line that parses as an access log
	// is one, anything else is the header row of a CSV file.
	FormatAuto TrafficFormat = "auto"
	// FormatCSV is comma-separated values with a header row naming the
	// columns. One record per line: a quoted field ("a,b", "say ""hi""")
	// may hold commas and doubled quotes but not a line break.
	FormatCSV TrafficFormat = "csv"
	// FormatJSONL is JSON Lines: one JSON object per line.
	FormatJSONL TrafficFormat = "jsonl"
	// FormatAccessLog is the NCSA combined log format written by nginx
	// (log_format combined) and Apache (LogFormat "%h %l %u %t \"%r\" %>s %b
	// \"%{Referer}i\" \"%{User-agent}i\""); the common format (without
	// referer and user agent) and extra fields after the user agent are
	// accepted too.
	FormatAccessLog TrafficFormat = "access-log"
)

// TimeUnit says how the time field of a CSV or JSON Lines traffic file is
// written.
type TimeUnit string

// The time units.
const (
	// UnitAuto reads RFC 3339 text as such and a number by its magnitude:
	// the absolute value of its integer part below 1e11 is Unix seconds (up
	// to the year 5138), below 1e14 milliseconds (from March 1973), below
	// 1e17 microseconds (from 1973), else nanoseconds. Each value is judged
	// on its own. Seconds and milliseconds may carry a decimal fraction.
	UnitAuto TimeUnit = "auto"
	// UnitRFC3339 requires RFC 3339 text, such as 2024-05-01T12:00:00.25Z
	// (a space instead of the T is accepted).
	UnitRFC3339 TimeUnit = "rfc3339"
	// UnitSeconds, UnitMillis, UnitMicros and UnitNanos require a Unix time
	// as a number in that unit.
	UnitSeconds TimeUnit = "s"
	UnitMillis  TimeUnit = "ms"
	UnitMicros  TimeUnit = "us"
	UnitNanos   TimeUnit = "ns"
)

// Defaults of TrafficOptions.
const (
	// DefaultReorderWindow is how far back in time a record may come after
	// a later one and still be put in order (nginx logs a request when it
	// ends, so a slow request is logged after faster later ones).
	DefaultReorderWindow = 5 * time.Second
	// DefaultMaxReorder is the most records held for reordering.
	DefaultMaxReorder = 1 << 16
	// DefaultMaxLineBytes is the longest line read; a longer one is malformed.
	DefaultMaxLineBytes = 64 << 10
	// DefaultMaxExamples is how many malformed lines TrafficStats keeps.
	DefaultMaxExamples = 5
)

// TrafficOptions say how to read a traffic file. The zero value reads any
// supported format with its default fields.
type TrafficOptions struct {
	// Format of the file; "" means FormatAuto. Gzip compression is detected
	// from the content (the magic bytes 1f 8b), whatever the format.
	Format TrafficFormat
	// TimeField names the time column (CSV) or field (JSON Lines); "" means
	// "timestamp". A JSON name with dots (a.b) looks inside objects when no
	// field has the whole name. Access logs always use [time_local]: a
	// TimeField other than "" or "time_local" is an error.
	TimeField string
	// KeyField names the key column or field; "" means "key" (CSV, JSON
	// Lines) or "remote_addr" (access logs). Access logs take remote_addr,
	// remote_user ("-" when none, a key like any other), request (the whole
	// request line), method, uri (path and query), path (without the
	// query), status, http_referer, http_user_agent, or extra1, extra2, ...
	// for the fields after the user agent (e.g. $http_x_forwarded_for).
	KeyField string
	// CostField names the cost column or field, an integer >= 1; a missing
	// or empty value costs 1. "" means "cost", and a file without that
	// column or field costs 1 everywhere; a CostField given explicitly must
	// be in the CSV header. Access logs: "" (cost 1) or "body_bytes_sent".
	CostField string
	// TimeUnit of CSV and JSON Lines times; "" means UnitAuto.
	TimeUnit TimeUnit
	// Strict makes the first malformed line an error returned by Next
	// (a *LineError) instead of a line counted and skipped. The error comes
	// as soon as the line is read, possibly before records of earlier lines
	// held for reordering.
	Strict bool
	// ReorderWindow is how late (in file order) a record may come: records
	// are held until a record ReorderWindow later has been read (or
	// MaxReorder are held), then given out in time order (file order for
	// equal times). A record earlier than one already given out is
	// malformed ("out of order"). Zero means DefaultReorderWindow; negative
	// means none: times must not decrease.
	ReorderWindow time.Duration
	// MaxReorder bounds the records held for reordering (memory); zero
	// means DefaultMaxReorder.
	MaxReorder int
	// MaxLineBytes bounds a line's length (memory); zero means
	// DefaultMaxLineBytes.
	MaxLineBytes int
	// MaxExamples is how many malformed lines TrafficStats.Examples keeps;
	// zero means DefaultMaxExamples, negative none.
	MaxExamples int
}

// TrafficRecord is one request read from a traffic file.
type TrafficRecord struct {
	// Time is the request's absolute time, as written (its location kept).
	Time time.Time
	// Key is the rate-limited key; never empty.
	Key string
	// Cost is the request's weight, >= 1.
	Cost int64
	// Line is the 1-based line number in the (decompressed) file.
	Line int64
}

// LineError is one malformed line.
type LineError struct {
	// Line is the 1-based line number in the (decompressed) file.
	Line int64
	// Reason says what is wrong, e.g. `bad time "x": ...`.
	Reason string
}

// Error reads "line 14: <reason>".
func (e *LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

// TrafficStats count what a TrafficReader has read so far.
type TrafficStats struct {
	// Format is the file's format (detected when the options said auto).
	Format TrafficFormat
	// Gzip says the file was gzip-compressed.
	Gzip bool
	// Lines is the number of lines read, the header and blank lines included.
	Lines int64
	// Records is the number of records given out by Next.
	Records int64
	// Malformed is the number of lines skipped as malformed (OutOfOrder included).
	Malformed int64
	// OutOfOrder is the number of records skipped because they came later
	// than ReorderWindow allows.
	OutOfOrder int64
	// Examples are the first malformed lines (TrafficOptions.MaxExamples of them).
	Examples []LineError
}

// Errors of NewTrafficReader and Next; test with errors.Is.
var (
	// ErrEmptyTraffic: the file (after decompression) has no bytes, or only blank lines.
	ErrEmptyTraffic = errors.New("traffic file is empty")
	// ErrBinaryTraffic: the file (after decompression) holds NUL bytes in
	// its first 512 bytes, which no text traffic file has.
	ErrBinaryTraffic = errors.New("binary data, not text")
	// ErrNoRecords: the file has lines but not one valid record.
	ErrNoRecords = errors.New("traffic file has no valid record")
)

// TrafficReader reads a traffic file as a stream of TrafficRecords in time
// order, holding at most MaxReorder records and one line in memory. It is
// not safe for concurrent use.
type TrafficReader struct {
	o       TrafficOptions
	br      *bufio.Reader
	parse   func(line []byte) (TrafficRecord, error)
	stats   TrafficStats
	held    recordHeap
	newest  time.Time // latest time read
	seen    bool      // a record has been read
	emitted time.Time // time of the last record given out
	given   bool      // a record has been given out
	eof     bool
	err     error // a sticky read error
}

// NewTrafficReader starts reading a traffic file from r (plain or gzip). It
// reads as far as the first line (and the CSV header) to detect the format
// and check the fields. Errors: ErrEmptyTraffic for an empty input, an
// unknown format or unit, a field the format lacks (naming it), a corrupt
// gzip header, and read errors of r.
func NewTrafficReader(r io.Reader, o TrafficOptions) (*TrafficReader, error) {
	if o.Format == "" {
		o.Format = FormatAuto
	}
	if o.TimeUnit == "" {
		o.TimeUnit = UnitAuto
	}
	switch o.TimeUnit {
	case UnitAuto, UnitRFC3339, UnitSeconds, UnitMillis, UnitMicros, UnitNanos:
	default:
		return nil, fmt.Errorf("time unit %q: want auto, rfc3339, s, ms, us or ns", o.TimeUnit)
	}
	if o.ReorderWindow == 0 {
		o.ReorderWindow = DefaultReorderWindow
	}
	if o.MaxReorder <= 0 {
		o.MaxReorder = DefaultMaxReorder
	}
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	if o.MaxExamples == 0 {
		o.MaxExamples = DefaultMaxExamples
	}
	t := &TrafficReader{o: o}
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("traffic file: %w", err)
	}
	if len(magic) == 0 {
		return nil, ErrEmptyTraffic
	}
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("traffic file: gzip: %w", err)
		}
		t.stats.Gzip = true
		br = bufio.NewReaderSize(zr, o.MaxLineBytes+2)
	} else if o.MaxLineBytes+2 > 64<<10 {
		br = bufio.NewReaderSize(br, o.MaxLineBytes+2)
	}
	t.br = br
	if head, _ := br.Peek(512); bytes.IndexByte(head, 0) >= 0 { // a read error is said by the reads below
		where := "byte"
		if t.stats.Gzip {
			where = "decompressed byte"
		}
		return nil, fmt.Errorf("traffic file: %w (a NUL at %s %d): want CSV, JSON Lines or an access log, plain or .gz", ErrBinaryTraffic, where, bytes.IndexByte(head, 0))
	}

	format := o.Format
	if format == FormatAuto {
		first, err := t.peekFirstLine()
		if err != nil {
			return nil, err
		}
		format = detectFormat(first)
	}
	t.stats.Format = format
	switch format {
	case FormatCSV:
		return t, t.initCSV()
	case FormatJSONL:
		return t, t.initJSONL()
	case FormatAccessLog:
		return t, t.initAccessLog()
	}
	return nil, fmt.Errorf("format %q: want auto, csv, jsonl or access-log", o.Format)
}

// peekFirstLine returns the first non-blank line without consuming it (it
// must fit in the buffer); ErrEmptyTraffic if there is none.
func (t *TrafficReader) peekFirstLine() ([]byte, error) {
	for n := 512; ; n *= 2 {
		buf, err := t.br.Peek(n)
		rest := buf
		for len(rest) > 0 {
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				break
			}
			if line := bytes.TrimSpace(rest[:i]); len(line) > 0 {
				return line, nil
			}
			rest = rest[i+1:]
		}
		if err != nil { // EOF or buffer full: the rest is the last (or a too long) line
			if line := bytes.TrimSpace(rest); len(line) > 0 {
				return line, nil
			}
			if errors.Is(err, io.EOF) {
				return nil, ErrEmptyTraffic
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				return nil, fmt.Errorf("traffic file: %w", err)
			}
			return nil, fmt.Errorf("traffic file: cannot detect the format: no line in the first %d bytes", len(buf))
		}
	}
}

// detectFormat implements FormatAuto.
func detectFormat(line []byte) TrafficFormat {
	if line[0] == '{' {
		return FormatJSONL
	}
	if _, err := parseAccessLine(line); err == nil {
		return FormatAccessLog
	}
	return FormatCSV
}

// readLine returns the next line without its line ending. A line longer
// than MaxLineBytes is skipped and reported as malformed. At the end it
// returns io.EOF.
func (t *TrafficReader) readLine() ([]byte, error) {
	for {
		line, err := t.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(line) > t.o.MaxLineBytes+1 {
			t.stats.Lines++
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = t.br.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("traffic file: %w", err)
			}
			if merr := t.malformed(t.stats.Lines, fmt.Sprintf("line longer than %d bytes", t.o.MaxLineBytes)); merr != nil {
				return nil, merr
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("traffic file: %w", err)
		}
		if len(line) == 0 && err != nil {
			return nil, io.EOF
		}
		t.stats.Lines++
		line = bytes.TrimSuffix(line, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
		return line, nil
	}
}

// malformed counts a malformed line; in Strict mode it returns the error.
func (t *TrafficReader) malformed(line int64, reason string) error {
	t.stats.Malformed++
	e := LineError{Line: line, Reason: reason}
	if t.o.MaxExamples > 0 && len(t.stats.Examples) < t.o.MaxExamples {
		t.stats.Examples = append(t.stats.Examples, e)
	}
	if t.o.Strict {
		return &e
	}
	return nil
}

// Next returns the next record in time order. At the end it returns io.EOF,
// or ErrNoRecords (wrapped, with the first malformed line) when not one
// line was valid. In Strict mode the first malformed line is returned as a
// *LineError. A read or decompression error is returned as is, and again
// on every later call.
func (t *TrafficReader) Next() (TrafficRecord, error) {
	if t.err != nil {
		return TrafficRecord{}, t.err
	}
	for {
		if t.held.Len() > 0 && (t.eof || t.held.Len() >= t.o.MaxReorder ||
			t.o.ReorderWindow < 0 || t.newest.Sub(t.held[0].Time) > t.o.ReorderWindow) {
			rec := t.held.pop()
			t.emitted, t.given = rec.Time, true
			t.stats.Records++
			return rec, nil
		}
		if t.eof {
			if t.stats.Records == 0 {
				t.err = t.noRecords()
			} else {
				t.err = io.EOF
			}
			return TrafficRecord{}, t.err
		}
		line, err := t.readLine()
		if errors.Is(err, io.EOF) {
			t.eof = true
			continue
		}
		if err != nil {
			t.err = err
			return TrafficRecord{}, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		rec, perr := t.parse(line)
		if perr == nil && t.given && rec.Time.Before(t.emitted) {
			t.stats.OutOfOrder++
			perr = fmt.Errorf("out of order: %s is %s before a record already read, more than the reorder window %s",
				rec.Time.Format(time.RFC3339Nano), t.emitted.Sub(rec.Time), max(0, t.o.ReorderWindow))
		}
		if perr != nil {
			if err := t.malformed(t.stats.Lines, perr.Error()); err != nil {
				t.err = err
				return TrafficRecord{}, err
			}
			continue
		}
		rec.Line = t.stats.Lines
		if !t.seen || rec.Time.After(t.newest) {
			t.newest, t.seen = rec.Time, true
		}
		t.held.push(rec)
	}
}

func (t *TrafficReader) noRecords() error {
	if t.stats.Malformed == 0 {
		if t.stats.Lines <= 1 && t.stats.Format == FormatCSV {
			return fmt.Errorf("%w: only a header line", ErrNoRecords)
		}
		return ErrEmptyTraffic
	}
	first := ""
	if len(t.stats.Examples) > 0 {
		first = " (first: " + t.stats.Examples[0].Error() + ")"
	}
	return fmt.Errorf("%w: all %d lines malformed%s", ErrNoRecords, t.stats.Malformed, first)
}

// Stats returns the counts so far; Examples is a fresh copy.
func (t *TrafficReader) Stats() TrafficStats {
	s := t.stats
	s.Examples = append([]LineError(nil), s.Examples...)
	return s
}

// recordHeap is a min-heap of held records by time, then line (written out
// rather than through container/heap, whose interface boxing costs a
// fifth of the reading time).
type recordHeap []TrafficRecord

func (h recordHeap) Len() int { return len(h) }

func (h recordHeap) less(i, j int) bool {
	if c := h[i].Time.Compare(h[j].Time); c != 0 {
		return c < 0
	}
	return h[i].Line < h[j].Line
}

func (h *recordHeap) push(r TrafficRecord) {
	*h = append(*h, r)
	for i := len(*h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		(*h)[i], (*h)[p] = (*h)[p], (*h)[i]
		i = p
	}
}

func (h *recordHeap) pop() TrafficRecord {
	old := *h
	top := old[0]
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && h.less(l, m) {
			m = l
		}
		if l+1 < n && h.less(l+1, m) {
			m = l + 1
		}
		if m == i {
			break
		}
		(*h)[i], (*h)[m] = (*h)[m], (*h)[i]
		i = m
	}
	return top
}

// fieldNames lists names for an error message.
func fieldNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
