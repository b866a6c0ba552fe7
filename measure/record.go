package measure

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Record is one streamed record of decisions.jsonl: what was asked, what
// the limiter answered, and when. Times are Unix µs; offsets are µs from the
// scenario's anchor (the aligned window boundary). It is the outermost of
// ratelab's decision records: harness.Outcome.Record writes one from the
// runner's outcome (an algorithms.Decision with its arrival and the call's
// times), for decisions.jsonl and for the demo's observer alike.
type Record struct {
	Algorithm string `json:"algorithm"`
	Scenario  string `json:"scenario"`
	// Seq is the arrival's index in its schedule.
	Seq    int    `json:"seq"`
	Client int    `json:"client"`
	Key    string `json:"key"`
	Cost   int64  `json:"cost"`
	// AtUS is the scheduled offset from the anchor, µs.
	AtUS int64 `json:"at_us"`
	// SentUS and RecvUS bracket the call on the local wall clock, Unix µs.
	SentUS int64 `json:"sent_us"`
	RecvUS int64 `json:"recv_us"`
	// DecidedAtUS is the time the script used (the limiter's clock), Unix µs.
	DecidedAtUS  int64  `json:"decided_at_us"`
	Allowed      bool   `json:"allowed"`
	Remaining    int64  `json:"remaining"`
	RetryAfterUS int64  `json:"retry_after_us"`
	LatencyUS    int64  `json:"latency_us"`
	Error        string `json:"error,omitempty"`
}

// DecisionLog streams Record values as JSON lines. Safe for concurrent
// use. Records are buffered and flushed at least every FlushEvery, on Flush
// and on Close, so a run that stops loses at most that much.
type DecisionLog struct {
	mu      sync.Mutex
	w       *bufio.Writer
	encode  func(w *bufio.Writer, r *Record) error
	last    time.Time
	err     error
	flusher interface{ Flush() error }
	closer  io.Closer
}

// FlushEvery is the longest a written record stays in DecisionLog's buffer.
const FlushEvery = 100 * time.Millisecond

// NewDecisionLog writes to w; a nil w discards records. If w is an
// io.Closer, Close closes it.
func NewDecisionLog(w io.Writer) *DecisionLog {
	var enc *json.Encoder
	return NewDecisionLogEncoded(w, func(bw *bufio.Writer, r *Record) error {
		if enc == nil {
			enc = json.NewEncoder(bw)
		}
		return enc.Encode(r)
	})
}

// NewDecisionLogEncoded is NewDecisionLog with an encoding of its own:
// encode appends one record to the log's buffer, records in the order
// written, one call at a time (it may keep state from record to record).
// If w has a Flush() error method (a compressor), Flush calls it after
// writing the buffer out; if w is an io.Closer, Close closes it.
func NewDecisionLogEncoded(w io.Writer, encode func(w *bufio.Writer, r *Record) error) *DecisionLog {
	if w == nil {
		w = io.Discard
	}
	l := &DecisionLog{w: bufio.NewWriterSize(w, 64<<10), encode: encode, last: time.Now()}
	if c, ok := w.(io.Closer); ok {
		l.closer = c
	}
	if f, ok := w.(interface{ Flush() error }); ok {
		l.flusher = f
	}
	return l
}

// Write appends one record. The first write error is kept and returned by
// every later call.
func (l *DecisionLog) Write(d *Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	l.err = l.encode(l.w, d)
	if l.err == nil && time.Since(l.last) >= FlushEvery {
		l.flush()
	}
	return l.err
}

// Flush writes buffered records out.
func (l *DecisionLog) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.flush()
	}
	return l.err
}

// flush writes the buffer out, then flushes the writer under it; l.mu held.
func (l *DecisionLog) flush() {
	l.err = l.w.Flush()
	if l.err == nil && l.flusher != nil {
		l.err = l.flusher.Flush()
	}
	l.last = time.Now()
}

// Close flushes and closes the underlying writer when it is a Closer.
func (l *DecisionLog) Close() error {
	err := l.Flush()
	if l.closer != nil {
		if cerr := l.closer.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
