// Package live draws `ratelab demo` in the terminal as it happens: an
// observer of the demo study (demo.Observer) that renders each
// decision the moment it is made. It never talks to Redis.
package live

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ratelab/ratelab/measure"
	"golang.org/x/term"
)

// Demo draws `ratelab demo` as it happens (it is a demo.Observer).
//
// On a terminal (tty) it redraws one frame every 100 ms: the plan, a
// countdown while it is parked before the boundary, then one timeline per
// algorithm — each burst's requests in arrival order, a █ per accepted, a ·
// per denied, ░ not yet sent, the window boundary ┃ between the bursts — and
// the accepted cost in the trailing window against the limit. Elsewhere it
// writes plain lines: the plan, a countdown line per second, one line per
// algorithm when a burst is over, and the final timeline in ASCII.
//
// Call Start after Planned may be called, Stop when the demo is over.
type Demo struct {
	w     io.Writer
	tty   bool
	width int

	mu       sync.Mutex
	plan     *measure.DemoPlan
	status   [][]int8 // [algorithm][seq]: 0 not yet, 1 accepted, 2 denied, 3 error
	accepted [][]measure.Event
	segs     [][2]int // [first, end) arrival index of each burst
	printed  []bool   // plain: burst lines written
	lastTick int      // plain: last countdown second written
	lines    int      // tty: lines of the last frame
	last     time.Duration
	planned  time.Time // local time Planned was called
	stop     chan struct{}
	done     chan struct{}
}

// Symbols of the timeline.
const (
	markAccepted = "█"
	markDenied   = "·"
	markMixed    = "▄"
	markPending  = "░"
	markBoundary = "┃"
)

// NewDemo draws on w, as a terminal frame when tty (width columns; 0
// means 100), else as plain lines.
func NewDemo(w io.Writer, tty bool, width int) *Demo {
	if width <= 0 {
		width = 100
	}
	return &Demo{w: w, tty: tty, width: width, lastTick: -1}
}

// Planned implements demo.Observer.
func (l *Demo) Planned(p measure.DemoPlan) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.plan = &p
	l.planned = time.Now()
	n := len(p.Arrivals)
	l.status = make([][]int8, len(p.Algorithms))
	l.accepted = make([][]measure.Event, len(p.Algorithms))
	for i := range l.status {
		l.status[i] = make([]int8, n)
	}
	// bursts: split where the boundary is crossed
	start := 0
	for i := 1; i <= n; i++ {
		if i == n || (p.Arrivals[i-1].At < 0) != (p.Arrivals[i].At < 0) {
			l.segs = append(l.segs, [2]int{start, i})
			start = i
		}
	}
	l.printed = make([]bool, len(l.segs))
	if !l.tty {
		fmt.Fprintf(l.w, "ratelab demo: %d algorithms, limit %s\nparked until the window boundary at %s (Redis clock)\nbursts: %s\n",
			len(p.Algorithms), rate(&p), p.Boundary.Format("15:04:05.000"), l.burstsDesc())
	}
}

// Decided implements demo.Observer.
func (l *Demo) Decided(algorithm int, r measure.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.plan == nil || algorithm < 0 || algorithm >= len(l.status) || r.Seq < 0 || r.Seq >= len(l.status[algorithm]) {
		return
	}
	switch {
	case r.Error != "":
		l.status[algorithm][r.Seq] = 3
	case r.Allowed:
		l.status[algorithm][r.Seq] = 1
		// the decision's time from the boundary, on the Redis clock
		at := time.UnixMicro(r.DecidedAtUS).Sub(l.plan.Boundary)
		l.accepted[algorithm] = append(l.accepted[algorithm], measure.Event{At: at, Cost: r.Cost})
	default:
		l.status[algorithm][r.Seq] = 2
	}
	// when the answer arrived, moved onto the Redis clock, from the boundary
	l.last = max(l.last, time.UnixMicro(r.RecvUS).Add(l.plan.Offset).Sub(l.plan.Boundary))
}

// Start begins drawing (every 100 ms) until Stop.
func (l *Demo) Start() {
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	if l.tty {
		fmt.Fprint(l.w, "\x1b[?25l") // hide the cursor while redrawing
	}
	go func() {
		defer close(l.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				l.tick(false)
			}
		}
	}()
}

// Stop draws the final frame (plain: the timeline in ASCII) and returns.
func (l *Demo) Stop() {
	if l.stop != nil {
		close(l.stop)
		<-l.done
	}
	l.tick(true)
	if l.tty {
		fmt.Fprint(l.w, "\x1b[?25h")
	}
}

func (l *Demo) tick(final bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.plan == nil {
		return
	}
	if l.tty {
		l.drawFrame(final)
		return
	}
	l.plainLines(final)
}

// now is the time from the boundary on the Redis clock.
func (l *Demo) now() time.Duration {
	return time.Now().Add(l.plan.Offset).Sub(l.plan.Boundary)
}

func (l *Demo) plainLines(final bool) {
	p := l.plan
	wait := time.Until(p.FirstLocal)
	if wait > 0 && !final {
		if s := int(math.Ceil(wait.Seconds())); s != l.lastTick {
			l.lastTick = s
			fmt.Fprintf(l.w, "first burst in %ds\n", s)
		}
		return
	}
	for si, seg := range l.segs {
		if l.printed[si] || !l.segDone(seg) {
			continue
		}
		l.printed[si] = true
		fmt.Fprintf(l.w, "burst at %s:\n", signed(p.Arrivals[seg[0]].At))
		for a, name := range p.Algorithms {
			acc, den := l.segCounts(a, seg)
			fmt.Fprintf(l.w, "  %-*s accepted %d, denied %d; in the last %s: %d/%d\n",
				l.labelWidth(), name, acc, den, p.Window, l.trailing(a), p.Limit)
		}
	}
	if final {
		fmt.Fprintln(l.w)
		for _, line := range l.timeline(false) {
			fmt.Fprintln(l.w, line)
		}
	}
}

func (l *Demo) segDone(seg [2]int) bool {
	for a := range l.status {
		for i := seg[0]; i < seg[1]; i++ {
			if l.status[a][i] == 0 {
				return false
			}
		}
	}
	return true
}

func (l *Demo) segCounts(a int, seg [2]int) (acc, den int64) {
	arr := l.plan.Arrivals
	for i := seg[0]; i < seg[1]; i++ {
		switch l.status[a][i] {
		case 1:
			acc += arr[i].Cost
		case 2:
			den += arr[i].Cost
		}
	}
	return acc, den
}

// trailing is algorithm a's accepted cost in the trailing window ending at
// the last answer (or now, while running).
func (l *Demo) trailing(a int) int64 {
	end := l.last
	var sum int64
	for _, e := range l.accepted[a] {
		if e.At > end-l.plan.Window && e.At <= end {
			sum += e.Cost
		}
	}
	return sum
}

func (l *Demo) labelWidth() int {
	n := 0
	for _, name := range l.plan.Algorithms {
		n = max(n, len(name))
	}
	return n + 2
}

func (l *Demo) drawFrame(final bool) {
	p := l.plan
	lines := joinFitting([]string{"\x1b[1mratelab demo\x1b[0m", fmt.Sprintf("%d algorithms", len(p.Algorithms)),
		"limit " + rate(p), "boundary " + p.Boundary.Format("15:04:05.000") + " (Redis clock)"}, " · ", l.width-1)
	bursts := l.burstParts()
	if len(bursts) > 0 {
		bursts[0] = "bursts: " + bursts[0]
	}
	lines = append(lines, joinFitting(bursts, " · ", l.width-1)...)
	wait := time.Until(p.FirstLocal)
	switch {
	case wait > 0 && !final:
		total := p.FirstLocal.Sub(l.planned)
		lines = append(lines, fmt.Sprintf("parked: first burst in \x1b[1m%4.1fs\x1b[0m  %s", wait.Seconds(), bar(1-wait.Seconds()/total.Seconds(), 30)))
	case !final:
		lines = append(lines, fmt.Sprintf("firing: %s from the boundary", signed(l.now().Round(10*time.Millisecond))))
	default:
		lines = append(lines, fmt.Sprintf("done: last answer at %s from the boundary", signed(l.last.Round(time.Millisecond))))
	}
	lines = append(lines, "")
	lines = append(lines, l.timeline(true)...)
	var b strings.Builder
	if l.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", l.lines)
	}
	for _, line := range lines {
		b.WriteString("\r\x1b[2K")
		// one screen line each, whatever the width, so moving up l.lines
		// lands on the frame's first line (a wrapped line would scroll)
		b.WriteString(truncate(line, l.width-1))
		b.WriteByte('\n')
	}
	l.lines = len(lines)
	_, _ = io.WriteString(l.w, b.String())
}

// timeline renders the header, one line per algorithm and the legend; tty
// selects the Unicode marks and colours, else ASCII.
func (l *Demo) timeline(tty bool) []string {
	p := l.plan
	arr := p.Arrivals
	lw := l.labelWidth()
	longest := 0
	for _, s := range l.segs {
		longest = max(longest, s[1]-s[0])
	}
	const countW = 22
	room := (l.width - lw - countW - 4*len(l.segs)) / max(len(l.segs), 1)
	per := max(1, int(math.Ceil(float64(longest)/float64(max(room, 4)))))
	acc, den, mix, pend, bound := markAccepted, markDenied, markMixed, markPending, markBoundary
	if !tty {
		acc, den, mix, pend, bound = "#", ".", "+", " ", "|"
	}
	colour := func(code, s string) string {
		if !tty {
			return s
		}
		return "\x1b[" + code + "m" + s + "\x1b[0m"
	}
	segWidth := func(s [2]int) int { return (s[1] - s[0] + per - 1) / per }

	// header: each burst's time and size, the boundary between
	head := strings.Repeat(" ", lw)
	for si, s := range l.segs {
		if si > 0 || arr[s[0]].At >= 0 {
			head += " " + bound + "  "
		} else {
			head += "  "
		}
		label := fmt.Sprintf("%s: %d", signed(arr[s[0]].At), s[1]-s[0])
		head += pad(label, segWidth(s))
		if si == 0 && arr[s[0]].At < 0 && len(l.segs) == 1 {
			head += " " + bound
		}
	}
	head += fmt.Sprintf("  in last %s", p.Window)
	out := []string{head}
	for a, name := range p.Algorithms {
		line := fmt.Sprintf("%-*s", lw, name)
		for si, s := range l.segs {
			if si > 0 || arr[s[0]].At >= 0 {
				line += " " + bound + "  "
			} else {
				line += "  "
			}
			for c := s[0]; c < s[1]; c += per {
				var na, nd, np int
				for i := c; i < min(c+per, s[1]); i++ {
					switch l.status[a][i] {
					case 0:
						np++
					case 1:
						na++
					default:
						nd++
					}
				}
				switch {
				case np > 0 && na+nd == 0:
					line += colour("2", pend)
				case nd == 0 && np == 0:
					line += colour("32", acc)
				case na == 0 && np == 0:
					line += colour("31", den)
				default:
					line += colour("33", mix)
				}
			}
		}
		n := l.trailing(a)
		count := fmt.Sprintf("%d/%d", n, p.Limit)
		if n > p.Limit {
			count = colour("1;31", count) + fmt.Sprintf(" %.2fx the limit", float64(n)/float64(p.Limit))
		}
		out = append(out, line+"  "+count)
	}
	unit := "1 request"
	if per > 1 {
		unit = fmt.Sprintf("%d requests", per)
	}
	out = append(out, "", fmt.Sprintf("%s accepted  %s denied  %s mixed  %s window boundary · one mark = %s",
		colour("32", acc), colour("31", den), colour("33", mix), bound, unit))
	return out
}

// burstsDesc says when each burst starts, how many requests it holds and
// how long it lasts: "50 at -1s over 49ms · 50 at +1s over 49ms".
func (l *Demo) burstsDesc() string { return strings.Join(l.burstParts(), " · ") }

// burstParts is burstsDesc's parts, one per burst.
func (l *Demo) burstParts() []string {
	arr := l.plan.Arrivals
	var parts []string
	for _, s := range l.segs {
		parts = append(parts, fmt.Sprintf("%d at %s over %s", s[1]-s[0], signed(arr[s[0]].At), arr[s[1]-1].At-arr[s[0]].At))
	}
	return parts
}

// joinFitting joins parts with sep into as few lines as hold them within
// width visible columns (escape sequences take none), starting a new line
// between parts rather than cutting one; the first part of a line opens
// it, the others follow sep. A part wider than width alone is its own line
// (cut where drawn). width <= 0: one line.
func joinFitting(parts []string, sep string, width int) []string {
	var lines []string
	cur := ""
	for _, p := range parts {
		switch {
		case cur == "":
			cur = p
		case width > 0 && visibleWidth(cur+sep+p) > width:
			lines = append(lines, cur)
			cur = p
		default:
			cur += sep + p
		}
	}
	return append(lines, cur)
}

// visibleWidth is how many columns s takes on a terminal: its runes, less
// escape sequences.
func visibleWidth(s string) int {
	n, inEsc := 0, false
	for _, r := range s {
		switch {
		case inEsc:
			inEsc = !(r >= '@' && r <= '~' && r != '[')
		case r == '\x1b':
			inEsc = true
		default:
			n++
		}
	}
	return n
}

// Height is how many lines the last frame drawn on a terminal took (0
// before the first, and when not on a terminal).
func (l *Demo) Height() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines
}

// truncate cuts line to at most width visible columns (escape sequences
// take none; every rune takes one), resetting attributes where it cuts.
func truncate(line string, width int) string {
	if width <= 0 {
		return line
	}
	col := 0
	inEsc := false
	for i, r := range line {
		switch {
		case inEsc:
			if r >= '@' && r <= '~' && r != '[' {
				inEsc = false
			}
			continue
		case r == '\x1b':
			inEsc = true
			continue
		}
		if col == width {
			return line[:i] + "\x1b[0m"
		}
		col++
	}
	return line
}

// bar is a progress bar of width cells, f in [0, 1].
func bar(f float64, width int) string {
	f = min(max(f, 0), 1)
	n := int(math.Round(f * float64(width)))
	return "[" + strings.Repeat("█", n) + strings.Repeat("░", width-n) + "]"
}

func pad(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return s + strings.Repeat(" ", n-len(s))
}

// signed renders a duration with its sign: "-1s", "+1.05s".
func signed(d time.Duration) string {
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

// Terminal reports whether w is a terminal, and its size in columns and
// lines (0, 0 when unknown).
func Terminal(w io.Writer) (tty bool, width, height int) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return false, 0, 0
	}
	width, height, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return true, 0, 0
	}
	return true, width, height
}

// IsTerminal reports whether r is a terminal (a person can answer on it).
func IsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// wrap breaks s into lines of at most width columns at spaces, followed by
// a blank line.
func Wrap(s string, width int) string {
	var b strings.Builder
	col := 0
	for _, word := range strings.Fields(s) {
		n := len([]rune(word))
		if col > 0 && col+1+n > width {
			b.WriteByte('\n')
			col = 0
		} else if col > 0 {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += n
	}
	b.WriteByte('\n')
	return b.String()
}

// rate is the plan's limit as the algorithms write it: "50 per 10s".
func rate(p *measure.DemoPlan) string { return fmt.Sprintf("%d per %s", p.Limit, p.Window) }
