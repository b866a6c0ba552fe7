package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
)

// trafficSource turns a TrafficReader's records into replay items: times
// relative to the traffic's anchor (its first time aligned down to the
// window), one simulated client per distinct key (numbered by first
// appearance), costs checked against the limit.
type trafficSource struct {
	tr     *scenarios.TrafficReader
	source string
	limit  int64
	cost   int64 // replaces every record's cost when > 0
	strict bool
	window time.Duration
	anchor time.Time // the traffic's t = 0
	base   time.Time // the virtual instant t = 0 is replayed at
	first  scenarios.TrafficRecord
	keys   map[string]clientKey
	// overLimit counts records whose cost exceeds the limit; overEx are
	// the first few.
	overLimit int64
	overEx    []measure.LineExample
	records   atomic.Int64
	last      time.Duration
}

type clientKey struct {
	key string
	n   int
}

// openTraffic starts reading traffic and reads its first record, so that a
// traffic that is empty, unreadable or without one valid record is a
// field error "traffic" before any decision is made.
func openTraffic(r io.Reader, cfg ReplayConfig) (*trafficSource, error) {
	bad := func(err error) error {
		return &field.Error{Name: "traffic", Err: fmt.Errorf("%s: %w", cfg.Source, err)}
	}
	tr, err := scenarios.NewTrafficReader(r, cfg.Traffic)
	if err != nil {
		return nil, bad(err)
	}
	first, err := tr.Next()
	if errors.Is(err, io.EOF) {
		err = scenarios.ErrNoRecords
	}
	if err != nil {
		return nil, bad(err)
	}
	return &trafficSource{tr: tr, source: cfg.Source, limit: cfg.Limit.Count, cost: cfg.Cost, strict: cfg.Traffic.Strict,
		window: cfg.Limit.Window, anchor: alignDown(first.Time, cfg.Limit.Window), base: alignUp(VirtualEpoch, cfg.Limit.Window),
		first: first, keys: map[string]clientKey{}}, nil
}

// alignDown returns t rounded down to a multiple of w since the Unix epoch (UTC).
func alignDown(t time.Time, w time.Duration) time.Time {
	ns := t.UnixNano()
	r := ns % int64(w)
	if r < 0 {
		r += int64(w)
	}
	return time.Unix(0, ns-r).UTC()
}

func (s *trafficSource) stats() scenarios.TrafficStats { return s.tr.Stats() }

// feed reads every record and hands them to send in batches of size (a
// fresh slice each: receivers read them concurrently). It stops early when
// send returns false. Errors: a read error, or (strict) a malformed line
// or a cost above the limit, as a field error "traffic".
func (s *trafficSource) feed(ctx context.Context, size int, send func([]replayItem) bool) error {
	batch := make([]replayItem, 0, size)
	rec := s.first
	seq := 0
	for {
		cost := rec.Cost
		if s.cost > 0 {
			cost = s.cost
		}
		if cost > s.limit {
			s.overLimit++
			ex := measure.LineExample{Line: rec.Line, Reason: fmt.Sprintf("cost %d is above the limit %d", cost, s.limit)}
			if s.strict {
				return &field.Error{Name: "traffic", Err: fmt.Errorf("%s: line %d: %s", s.source, ex.Line, ex.Reason)}
			}
			if len(s.overEx) < scenarios.DefaultMaxExamples {
				s.overEx = append(s.overEx, ex)
			}
		} else {
			c, ok := s.keys[rec.Key]
			if !ok {
				c = clientKey{key: rec.Key, n: len(s.keys)}
				s.keys[rec.Key] = c
			}
			at := rec.Time.Sub(s.anchor)
			s.last = at
			batch = append(batch, replayItem{seq: seq, a: scenarios.Arrival{At: at, Key: c.key, Cost: cost, Client: c.n}})
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
		var err error
		rec, err = s.tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var le *scenarios.LineError
		if errors.As(err, &le) {
			return &field.Error{Name: "traffic", Err: fmt.Errorf("%s: %w", s.source, err)}
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", s.source, err)
		}
	}
	if len(batch) > 0 {
		send(batch)
	}
	return nil
}

// info describes what was read (call once feed returned).
func (s *trafficSource) info(cfg ReplayConfig) *measure.TrafficInfo {
	st := s.tr.Stats()
	info := &measure.TrafficInfo{
		Source: s.source, Format: string(st.Format), Gzip: st.Gzip,
		Lines: st.Lines, Records: s.records.Load(), Malformed: st.Malformed + s.overLimit, OutOfOrder: st.OutOfOrder,
		Keys: int64(len(s.keys)), Anchor: s.anchor.Format(time.RFC3339Nano),
		SpanMS: float64(s.last.Microseconds()) / 1000, Pipeline: cfg.Pipeline,
	}
	for _, e := range st.Examples {
		info.Examples = append(info.Examples, measure.LineExample{Line: e.Line, Reason: e.Reason})
	}
	info.Examples = sortExamples(append(info.Examples, s.overEx...), scenarios.DefaultMaxExamples)
	return info
}
