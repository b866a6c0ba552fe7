package plots

import (
	"io"
	"slices"
	"sync"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
)

// Early draws the plots of a run's scenarios while the run goes on: told
// that a scenario ended (Scenario), it draws that scenario's trailing-window
// and timeline plots (PNG and SVG), one file at a time on one goroutine,
// and keeps them in memory; WriteDir of Early.Of(r) writes them instead of
// drawing them again, and draws what is left. The plots of a scenario read
// only its own rows and the order the algorithms first appear in, both
// final once it ended, so they are the same bytes as drawn after the run.
// Nothing is written before WriteDir: a run that stops early leaves no
// plot. A nil *Early draws nothing. Its methods may be called from any
// goroutine.
type Early struct {
	mu      sync.Mutex
	files   map[earlyKey]*earlyFile
	queue   []*earlyFile // not started, in the order told
	busy    bool         // the drawing goroutine is under way
	stopped bool         // WriteDir began: what is not started is its to draw
}

// earlyKey names one plot file: its kind ("trailing" or "timeline"), the
// scenario and the extension.
type earlyKey struct{ kind, scenario, ext string }

// earlyFile is one plot file drawn early: started once the drawing
// goroutine took it (else WriteDir draws it), data and err set before done
// is closed.
type earlyFile struct {
	draw    func() ([]byte, error)
	started bool
	done    chan struct{}
	data    []byte
	err     error
}

// NewEarly returns an Early with nothing drawn.
func NewEarly() *Early { return &Early{files: map[earlyKey]*earlyFile{}} }

// Scenario starts drawing the plots of scenario, whose rows in r are
// final; r's rows before it too (they give the algorithms' colours). The
// rows are copied before it returns: the caller may append to r.Results.
func (e *Early) Scenario(r *measure.Results, scenario string) {
	if e == nil || r == nil {
		return
	}
	snap := &measure.Results{Results: slices.Clone(r.Results)}
	var trailing, timeline bool
	for _, row := range snap.Results {
		if row.Scenario == scenario {
			trailing = trailing || len(row.Trailing) > 0
			timeline = timeline || len(row.Timeline) > 0
		}
	}
	type figureOf func(*measure.Results, string, string) (*figure, error)
	kinds := []struct {
		name string
		has  bool
		fig  figureOf
	}{{"trailing", trailing, trailingFigure}, {"timeline", timeline, timelineFigure}}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, k := range kinds {
		if !k.has {
			continue
		}
		for _, ext := range []string{".png", ".svg"} {
			name := k.name + "-" + reports.FileSafe(scenario) + ext
			f := &earlyFile{done: make(chan struct{}), draw: func() ([]byte, error) {
				fig, err := k.fig(snap, scenario, name)
				if err != nil {
					return nil, err
				}
				return fig.encode()
			}}
			e.files[earlyKey{k.name, scenario, ext}] = f
			e.queue = append(e.queue, f)
		}
	}
	if !e.busy && !e.stopped && len(e.queue) > 0 {
		e.busy = true
		go e.drawQueued()
	}
}

// drawQueued draws the queued files one after another until none is left.
func (e *Early) drawQueued() {
	for {
		e.mu.Lock()
		if len(e.queue) == 0 || e.stopped {
			e.busy = false
			e.mu.Unlock()
			return
		}
		f := e.queue[0]
		e.queue = e.queue[1:]
		f.started = true
		e.mu.Unlock()
		f.data, f.err = f.draw()
		close(f.done)
	}
}

// stop starts no more files: WriteDir draws those not started with the
// rest, on every core, while the one under way is finished.
func (e *Early) stop() {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopped = true
	e.queue = nil
}

// take returns the file of key drawn early, waiting for it when it is
// being drawn; false when it was not told, not started (it is then taken
// off the queue: the caller draws it) or failed (the caller draws it
// again, for the error with its path).
func (e *Early) take(key earlyKey) ([]byte, bool) {
	if e == nil {
		return nil, false
	}
	e.mu.Lock()
	f := e.files[key]
	if f == nil {
		e.mu.Unlock()
		return nil, false
	}
	delete(e.files, key)
	if !f.started {
		e.queue = slices.DeleteFunc(e.queue, func(q *earlyFile) bool { return q == f })
		e.mu.Unlock()
		return nil, false
	}
	e.mu.Unlock()
	<-f.done
	return f.data, f.err == nil
}

// Of returns r with the plots e drew, for publish.WriteResultsDir and
// publish.Publish: its results directory is publish.WriteDir's, with those
// plots. A nil e or r gives r.
func (e *Early) Of(r *measure.Results) any {
	if e == nil || r == nil {
		return r
	}
	return &Drawn{Results: r, Early: e}
}

// Drawn is a run's results with the plots Early drew while it ran (Of).
type Drawn struct {
	Results *measure.Results
	Early   *Early
}

// save writes path with the file of key drawn early, or else with draw.
func (e *Early) save(key earlyKey, path string, draw func() error) error {
	data, ok := e.take(key)
	if !ok {
		return draw()
	}
	return writeFile(path, func(w io.Writer) error { _, err := w.Write(data); return err })
}
