package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
)

// trafficSource turns a TrafficReader's records into replay items through
// the one scenarios.ArrivalStream: times relative to the traffic's anchor
// (its first time aligned down to the window), one simulated client per
// distinct key (numbered by first appearance), costs checked against the
// limit.
type trafficSource struct {
	tr     *scenarios.TrafficReader
	arr    *scenarios.ArrivalStream
	source string
	strict bool
	base   time.Time // the virtual instant t = 0 is replayed at
	// first is the first arrival, or firstErr a first record above the limit
	first    scenarios.Arrival
	firstErr error
	// overLimit counts records whose cost exceeds the limit; overEx are
	// the first few.
	overLimit int64
	overEx    []measure.LineExample
	records   atomic.Int64
	last      time.Duration
}

// openTraffic starts reading traffic and reads its first record, so that a
// traffic that is empty, unreadable or without one valid record is a
// field error "traffic" before any decision is made.
func openTraffic(r io.Reader, cfg Config) (*trafficSource, error) {
	bad := func(err error) error {
		return &field.Error{Name: "traffic", Err: fmt.Errorf("%s: %w", cfg.Source, err)}
	}
	tr, err := scenarios.NewTrafficReader(r, cfg.Traffic)
	if err != nil {
		return nil, bad(err)
	}
	arr, err := scenarios.NewArrivalStream(tr, cfg.Limit.Window)
	if err != nil {
		return nil, bad(err)
	}
	arr.Cost, arr.Limit = cfg.Cost, cfg.Limit.Count
	first, err := arr.Next()
	if errors.Is(err, io.EOF) {
		err = scenarios.ErrNoRecords
	}
	var le *scenarios.LineError
	if err != nil && (cfg.Traffic.Strict || !errors.As(err, &le)) {
		return nil, bad(err)
	}
	// a first record above the limit (not strict) is skipped by feed
	return &trafficSource{tr: tr, arr: arr, source: cfg.Source, strict: cfg.Traffic.Strict,
		base: harness.AlignUp(harness.VirtualEpoch, cfg.Limit.Window), first: first, firstErr: err}, nil
}

func (s *trafficSource) stats() scenarios.TrafficStats { return s.tr.Stats() }

// feed reads every record and hands them to send in batches of size (a
// fresh slice each: receivers read them concurrently). It stops early when
// send returns false. Errors: a read error, or (strict) a malformed line
// or a cost above the limit, as a field error "traffic".
func (s *trafficSource) feed(ctx context.Context, size int, send func([]replayItem) bool) error {
	batch := make([]replayItem, 0, size)
	a, err := s.first, s.firstErr
	seq := 0
	for {
		var le *scenarios.LineError
		switch {
		case errors.Is(err, io.EOF):
			if len(batch) > 0 {
				send(batch)
			}
			return nil
		case errors.As(err, &le):
			// Strict: a malformed line or a cost above the limit; else
			// only the latter (the reader skips malformed lines)
			if s.strict {
				return &field.Error{Name: "traffic", Err: fmt.Errorf("%s: %w", s.source, err)}
			}
			s.overLimit++
			if len(s.overEx) < scenarios.DefaultMaxExamples {
				s.overEx = append(s.overEx, measure.LineExample{Line: le.Line, Reason: le.Reason})
			}
		case err != nil:
			return fmt.Errorf("read %s: %w", s.source, err)
		default:
			s.last = a.At
			batch = append(batch, replayItem{seq: seq, a: a})
			seq++
			s.records.Add(1)
			if len(batch) == size {
				if !send(batch) {
					return nil
				}
				batch = make([]replayItem, 0, size)
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		a, err = s.arr.Next()
	}
}

// info describes what was read (call once feed returned).
func (s *trafficSource) info(cfg Config) *measure.TrafficInfo {
	st := s.tr.Stats()
	info := &measure.TrafficInfo{
		Source: s.source, Format: string(st.Format), Gzip: st.Gzip,
		Lines: st.Lines, Records: s.records.Load(), Malformed: st.Malformed + s.overLimit, OutOfOrder: st.OutOfOrder,
		Keys: int64(s.arr.Clients()), Anchor: s.arr.Anchor().Format(time.RFC3339Nano),
		SpanMS: float64(s.last.Microseconds()) / 1000, Pipeline: cfg.Pipeline,
	}
	for _, e := range st.Examples {
		info.Examples = append(info.Examples, measure.LineExample{Line: e.Line, Reason: e.Reason})
	}
	info.Examples = sortExamples(append(info.Examples, s.overEx...), scenarios.DefaultMaxExamples)
	return info
}
