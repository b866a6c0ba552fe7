package reports

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/ratelab/ratelab/measure"
)

// burst is what one algorithm did in the two bursts of a boundary-burst
// row, from its timeline (times in ms from the boundary).
type burst struct {
	beforeAcc, beforeDen, afterAcc, afterDen int64
	beforeStart, beforeEnd                   float64
	afterStart, afterEnd                     float64
	hasBefore, hasAfter                      bool
}

func burstsOf(row measure.Row) burst {
	var b burst
	for _, p := range row.Timeline {
		if p.TMS < 0 {
			if !b.hasBefore {
				b.beforeStart = p.TMS
			}
			b.hasBefore = true
			b.beforeEnd = p.TMS
			b.beforeAcc, b.beforeDen = p.Accepted, p.Denied
			continue
		}
		if !b.hasAfter {
			b.afterStart = p.TMS
		}
		b.hasAfter = true
		b.afterEnd = p.TMS
		b.afterAcc, b.afterDen = p.Accepted-b.beforeAcc, p.Denied-b.beforeDen
	}
	return b
}

var precisionRe = regexp.MustCompile(`precision ([0-9a-zµ.]+)\)`)

// Explain tells, per algorithm row of a boundary-burst run (what `ratelab
// demo` measures), what happened and why, from the measured numbers only:
// the accepted and denied cost of the burst before the boundary and of the
// one after, the time between them, the most accepted in one window against
// the limit and the ideal, and, for the algorithms ratelab knows, the
// mechanism's own arithmetic applied to the measured times (the refill a
// token bucket earned in the measured gap, the weight the sliding counter
// gave the previous window at the measured instant). Rows without a
// timeline on both sides of the boundary get only the measured totals. The
// first line describes the bursts.
func Explain(r *measure.Results) []string {
	var out []string
	for i, row := range r.Results {
		b := burstsOf(row)
		W := time.Duration(row.WindowMS) * time.Millisecond
		L := row.Limit
		if i == 0 && b.hasBefore && b.hasAfter {
			out = append(out, fmt.Sprintf("Each algorithm got %d requests %s before the window boundary (within %s) and %d more %s after it, "+
				"%s apart — all inside one %s window, so at most %d should have been accepted.",
				b.beforeAcc+b.beforeDen, ms(-b.beforeStart), ms(b.beforeEnd-b.beforeStart), b.afterAcc+b.afterDen,
				ms(b.afterStart), ms(b.afterStart-b.beforeEnd), FormatWindow(row.WindowMS), L))
		}
		var s strings.Builder
		fmt.Fprintf(&s, "%s accepted %d of %d before the boundary and %d of %d after it. ",
			row.Algorithm, b.beforeAcc, b.beforeAcc+b.beforeDen, b.afterAcc, b.afterAcc+b.afterDen)
		gap := time.Duration((b.afterStart - b.beforeEnd) * float64(time.Millisecond))
		if b.hasBefore && b.hasAfter && b.beforeAcc > 0 {
			s.WriteString(mechanism(row, b, W, L, gap))
		}
		verdict := "within the limit"
		if row.Ratio > 1 {
			verdict = fmt.Sprintf("%sx the limit: %d more than allowed", FormatFixed(row.Ratio, 2), row.MaxInWindow-L)
		}
		fmt.Fprintf(&s, "Most accepted within one %s window: %d of %d allowed — %s; an exact sliding log would have accepted %d (fidelity %s).",
			FormatWindow(row.WindowMS), row.MaxInWindow, L, verdict, row.Ideal, FormatFixed(row.Fidelity, 2))
		out = append(out, s.String())
	}
	return out
}

// mechanism is the known algorithms' arithmetic on the measured numbers.
func mechanism(row measure.Row, b burst, W time.Duration, L int64, gap time.Duration) string {
	rate := float64(L) / W.Seconds() // units per second
	switch row.Algorithm {
	case "fixed-window":
		if b.afterAcc > 0 {
			return fmt.Sprintf("It counts per window number floor(t/W): the first burst filled the counter of the window that ended at the boundary, "+
				"and %s later the second burst found the next window's counter empty. ", ms(float64(gap.Milliseconds())))
		}
		return "Both bursts fell in one window's counter. "
	case "sliding-log":
		return fmt.Sprintf("It keeps a timestamp per accepted request: at %s the %d accepted at %s were still inside the trailing %s "+
			"(they leave at %s), so it refused what did not fit. ",
			ms(b.afterStart), b.beforeAcc, ms(b.beforeStart), W, ms(b.beforeStart+float64(W.Milliseconds())))
	case "bucketed-hash":
		p := "its precision"
		if m := precisionRe.FindStringSubmatch(row.LimitDesc); m != nil {
			p = "blocks of " + m[1]
		}
		return fmt.Sprintf("It sums block counters (%s) over the trailing window: the block holding the first burst was still inside the window at %s, "+
			"so it counted those %d. ", p, ms(b.afterStart), b.beforeAcc)
	case "reservoir", "gcra":
		span := time.Duration((b.afterEnd - b.beforeStart) * float64(time.Millisecond))
		what := fmt.Sprintf("It is a token bucket of %d refilled at %d per %s (%.2f/s)", L, L, W, rate)
		if row.Algorithm == "gcra" {
			what = fmt.Sprintf("It is redis_rate's GCRA with burst %d and one unit every %s (%.2f/s)", L, (W / time.Duration(L)).Round(time.Microsecond), rate)
		}
		return fmt.Sprintf("%s: from the first request at %s to the last at %s (%s) it earned %.1f on top of the full %d it started with, "+
			"so the second burst could take about %d. ", what, ms(b.beforeStart), ms(b.afterEnd), span.Round(time.Millisecond),
			rate*span.Seconds(), L, int64(math.Floor(rate*span.Seconds()+1e-9)))
	case "sliding-counter":
		weight := func(at float64) float64 {
			e := time.Duration(at * float64(time.Millisecond))
			return float64(W-e) / float64(W)
		}
		w0, w1 := weight(b.afterStart), weight(b.afterEnd)
		e0, e1 := float64(b.beforeAcc)*w0, float64(b.beforeAcc)*w1
		return fmt.Sprintf("It weighs the previous window's count by its overlap with the trailing window: at %s the %d of the previous window "+
			"counted %.0f%% = %.1f, leaving room for %.1f, and by the burst's last request at %s %.0f%% = %.1f, room for %.1f — "+
			"an estimate that assumes those %d were spread over the whole window, when they all came %s before its end. ",
			ms(b.afterStart), b.beforeAcc, 100*w0, e0, float64(L)-e0, ms(b.afterEnd), 100*w1, e1, float64(L)-e1, b.beforeAcc, ms(-b.beforeEnd))
	}
	return ""
}

// ms renders milliseconds as a short duration ("1s", "1.05s", "250ms").
func ms(v float64) string {
	d := time.Duration(math.Round(v*1000)) * time.Microsecond
	switch {
	case d.Abs() >= time.Second:
		d = d.Round(10 * time.Millisecond)
	case d.Abs() >= 10*time.Millisecond:
		d = d.Round(time.Millisecond)
	}
	return d.String()
}
