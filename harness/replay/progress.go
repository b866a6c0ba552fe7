package replay

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// replayProgressEvery is how often a replay whose progress writer is not a
// terminal prints a progress line.
var replayProgressEvery = 5 * time.Second

// startProgress shows a replay's progress on w until the returned stop is
// called: a progress bar over the traffic's bytes (size, or a spinner when
// size is 0) when w is a terminal, else a plain line every
// replayProgressEvery. A nil w shows nothing.
func startProgress(w io.Writer, size int64, counted *countingReader, src *trafficSource, workers []*replayWorker) (stop func()) {
	if w == nil {
		return func() {}
	}
	decisions := func() int64 {
		var n int64
		for _, wk := range workers {
			n += wk.decisions.Load()
		}
		return n
	}
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		total := size
		if total <= 0 {
			total = -1
		}
		bar := progressbar.NewOptions64(total, progressbar.OptionSetWriter(w), progressbar.OptionShowBytes(true),
			progressbar.OptionSetDescription("replay"), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetWidth(30), progressbar.OptionClearOnFinish())
		go func() {
			defer wg.Done()
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-done:
					_ = bar.Finish() // a progress bar on the terminal: nothing to tell
					return
				case <-t.C:
					bar.Describe(fmt.Sprintf("replay: %d requests, %d decisions", src.records.Load(), decisions()))
					_ = bar.Set64(counted.n.Load()) // as Finish
				}
			}
		}()
	} else {
		go func() {
			defer wg.Done()
			t := time.NewTicker(replayProgressEvery)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					n, el := decisions(), time.Since(start).Seconds()
					pct := ""
					if size > 0 {
						pct = fmt.Sprintf(" (%.0f%% of the file)", 100*float64(counted.n.Load())/float64(size))
					}
					fmt.Fprintf(w, "replay: %d requests read%s, %d decisions, %.0f decisions/s\n",
						src.records.Load(), pct, n, float64(n)/el)
				}
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}
