package scenarios

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// ArrivalStream turns a TrafficReader's records into Arrivals relative to an
// anchor: the first record's time aligned down to a multiple of the window
// since the Unix epoch (as the harness aligns At = 0). Each distinct key is
// one simulated client, numbered by first appearance (0, 1, ...), so the
// numbering is stable for a given file. It holds one entry per distinct key
// (the keys are shared with the Arrivals it returns). Not safe for
// concurrent use.
type ArrivalStream struct {
	// Cost, when > 0, replaces every record's cost.
	Cost int64
	// Limit, when > 0, is the largest cost of an arrival: Next returns a
	// record costing more as a *LineError ("cost 3 is above the limit 2")
	// and gives its key no client number; the stream goes on with the next
	// record. Zero accepts any cost.
	Limit int64

	r       *TrafficReader
	window  time.Duration
	anchor  time.Time
	started bool
	clients map[string]client
}

type client struct {
	key string
	n   int
}

// NewArrivalStream reads arrivals from r for a limit window (> 0); the
// window only places the anchor. It returns an error for a window <= 0.
func NewArrivalStream(r *TrafficReader, window time.Duration) (*ArrivalStream, error) {
	if window <= 0 {
		return nil, fmt.Errorf("window: must be > 0, got %s", window)
	}
	return &ArrivalStream{r: r, window: window, clients: map[string]client{}}, nil
}

// Next returns the next arrival in time order, or the reader's error
// (io.EOF at the end), or a record above Limit (a *LineError). At is the
// record's time minus Anchor.
func (s *ArrivalStream) Next() (Arrival, error) {
	rec, err := s.r.Next()
	if err != nil {
		return Arrival{}, err
	}
	if !s.started {
		s.anchor = alignDown(rec.Time, s.window)
		s.started = true
	}
	cost := rec.Cost
	if s.Cost > 0 {
		cost = s.Cost
	}
	if s.Limit > 0 && cost > s.Limit {
		return Arrival{}, &LineError{Line: rec.Line, Reason: fmt.Sprintf("cost %d is above the limit %d", cost, s.Limit)}
	}
	c, ok := s.clients[rec.Key]
	if !ok {
		c = client{key: rec.Key, n: len(s.clients)}
		s.clients[rec.Key] = c
	}
	// c.key is the first copy of the key: equal keys take memory once.
	return Arrival{At: rec.Time.Sub(s.anchor), Key: c.key, Cost: cost, Client: c.n}, nil
}

// Anchor is the time At = 0 stands for: the first record's time aligned
// down to the window (UTC). Zero before the first Next.
func (s *ArrivalStream) Anchor() time.Time { return s.anchor }

// Clients is the number of distinct keys (simulated clients) so far.
func (s *ArrivalStream) Clients() int { return len(s.clients) }

// alignDown returns t rounded down to a multiple of w since the Unix epoch.
func alignDown(t time.Time, w time.Duration) time.Time {
	ns := t.UnixNano()
	r := ns % int64(w)
	if r < 0 {
		r += int64(w)
	}
	return time.Unix(0, ns-r).UTC()
}

// ReadTrafficSchedule reads all of r into a Schedule named name: Params p
// (Limit >= 1 and Window > 0 are required: a traffic file has no defaults),
// arrivals relative to the returned anchor (see ArrivalStream). A cost
// above p.Limit is an error naming its line. The schedule is held in memory
// (about 50 bytes per arrival, plus each distinct key once); for files too
// big for that, use ArrivalStream. Malformed lines are skipped as the
// reader's options say; r.Stats tells how many.
func ReadTrafficSchedule(r *TrafficReader, name string, p Params) (Schedule, time.Time, error) {
	if p.Limit < 1 {
		return Schedule{}, time.Time{}, fmt.Errorf("limit: must be >= 1, got %d", p.Limit)
	}
	s, err := NewArrivalStream(r, p.Window)
	if err != nil {
		return Schedule{}, time.Time{}, err
	}
	s.Limit = p.Limit
	var arr []Arrival
	for {
		a, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Schedule{}, time.Time{}, err
		}
		arr = append(arr, a)
	}
	// The reader gives records in time order, so arr is already sorted.
	return Schedule{Scenario: name, Params: p, Arrivals: arr}, s.anchor, nil
}
