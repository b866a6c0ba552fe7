package reports

import (
	"fmt"
	"math"
	"time"

	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// WhyBroke says in one sentence, from the row's worst window
// (Row.Worst), why an algorithm that exceeded its limit did: what it
// accepted on each side of the aligned boundary inside that window, and
// which of three shapes the figures fit, each checked against the row's
// own numbers, never assumed from the algorithm's name:
//
//   - after the boundary alone reaches the limit: the count restarted at
//     the boundary ("counter reset at the boundary: 50 before + 50 after");
//   - after matches what L per W refills between the first accepted
//     before and the last accepted after (±1): a bucket that refilled;
//   - after matches L minus the before count weighed by the part of the
//     previous window still overlapping (±1): a previous window weighed
//     in at part.
//
// Otherwise it gives the split alone. "" for a row within its limit or
// without a worst window.
func WhyBroke(row measure.Row) string {
	s := row.Worst
	if s == nil || row.Ratio <= 1 || row.Limit <= 0 || row.WindowMS <= 0 {
		return ""
	}
	b, a := s.Before, s.After
	at := "the boundary at " + msText(s.BoundaryMS)
	L, W := float64(row.Limit), float64(row.WindowMS)
	switch {
	case b.Requests == 0:
		return fmt.Sprintf("%d accepted after %s, within %s of one aligned window: more than L with no boundary crossed",
			a.Accepted, at, msSpan(a.LastMS-a.FirstMS))
	case a.Requests == 0:
		return fmt.Sprintf("%d accepted before %s, within %s of one aligned window: more than L with no boundary crossed",
			b.Accepted, at, msSpan(b.LastMS-b.FirstMS))
	case a.Accepted >= row.Limit:
		return fmt.Sprintf("counter reset at %s: %d before + %d after (the %d after alone reach L = %d)",
			at, b.Accepted, a.Accepted, a.Accepted, row.Limit)
	}
	dt := a.LastMS - b.FirstMS
	if refill := L * dt / W; math.Abs(float64(a.Accepted)-refill) <= 1 {
		return fmt.Sprintf("refilled while it waited: %d before %s + %d after, what %d per %s refills in the %s between them",
			b.Accepted, at, a.Accepted, row.Limit, FormatWindow(row.WindowMS), msSpan(dt))
	}
	weight := 1 - (a.FirstMS-s.BoundaryMS)/W
	if counted := float64(b.Accepted) * weight; weight > 0 && weight < 1 && math.Abs(float64(a.Accepted)-(L-counted)) <= 1 {
		return fmt.Sprintf("the previous window weighed in at %.2f: %d before %s counted as %.0f %s later, leaving room for %d after",
			weight, b.Accepted, at, counted, msSpan(a.FirstMS-s.BoundaryMS), a.Accepted)
	}
	return fmt.Sprintf("%d accepted before %s + %d after, within %s", b.Accepted, at, a.Accepted, msSpan(a.LastMS-b.FirstMS))
}

// msText is a time in ms from the anchor, signed: "+0s", "-1s", "+1.5s".
func msText(ms float64) string {
	d := time.Duration(math.Round(ms*1000)) * time.Microsecond
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

// msSpan is a span of ms as a person reads it ("2s", "1.02ms").
func msSpan(ms float64) string {
	return limit.FormatRough(time.Duration(math.Round(ms*1000)) * time.Microsecond)
}
