package measure_test

import (
	"fmt"
	"time"

	"github.com/ratelab/ratelab/measure"
)

// burst returns n requests of cost 1, 100 ms apart, from start.
func burst(start time.Duration, n int) []measure.Event {
	var ev []measure.Event
	for i := range n {
		ev = append(ev, measure.Event{At: start + time.Duration(i)*100*time.Millisecond, Cost: 1})
	}
	return ev
}

// A fixed window of 5 per 10 s accepted 5 requests just before its boundary
// at 10 s and 5 just after: its own windows [0s, 10s) and [10s, 20s) counted
// 5 each, but one half-open interval (t-10s, t] holds all 10, twice the
// limit. Two requests exactly one window apart never share an interval.
func ExampleMaxInWindow() {
	window := 10 * time.Second
	accepted := append(burst(9500*time.Millisecond, 5), burst(10*time.Second, 5)...) // 9.5s..9.9s, 10s..10.4s
	n, end := measure.MaxInWindow(accepted, window)
	fmt.Printf("max in window %d, in (%s, %s]: ratio %.1f\n", n, end-window, end, float64(n)/5)

	n, end = measure.MaxInWindow([]measure.Event{{At: 0, Cost: 1}, {At: window, Cost: 1}}, window)
	fmt.Printf("exactly one window apart: max %d, first reached at %s\n", n, end)
	// Output:
	// max in window 10, in (400ms, 10.4s]: ratio 2.0
	// exactly one window apart: max 1, first reached at 0s
}

// The same two bursts offered to an exact sliding log of 5 per 10 s, and a
// late request of cost 3 at 19.7 s: the log takes the first burst, none of
// the second, and the late request, since three units of the first burst
// (9.5 s, 9.6 s, 9.7 s) have left the window (9.7s, 19.7s] by then. Ideal is
// the oracle of fidelity: a limiter that accepts less starves legitimate
// traffic.
func ExampleIdeal() {
	window := 10 * time.Second
	offered := append(burst(9500*time.Millisecond, 5), burst(10*time.Second, 5)...)
	offered = append(offered, measure.Event{At: 19700 * time.Millisecond, Cost: 3})
	ideal := measure.Ideal(offered, 5, window)
	fmt.Println("ideal accepts", ideal, "of 13 offered")

	// 100 ms earlier, only two units had left: the late request did not fit
	offered[len(offered)-1].At = 19600 * time.Millisecond
	fmt.Println("at 19.6s, ideal accepts", measure.Ideal(offered, 5, window))

	accepted := int64(5) // a limiter that took the first burst but refused the late request
	fmt.Printf("its fidelity: %d/%d = %.3f\n", accepted, ideal, float64(accepted)/float64(ideal))
	// Output:
	// ideal accepts 8 of 13 offered
	// at 19.6s, ideal accepts 5
	// its fidelity: 5/8 = 0.625
}
