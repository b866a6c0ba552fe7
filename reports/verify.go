package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// WriteVerify renders a verification report: "table" prints the verdict, a
// table of the families and the counter-example (if any) for people; "json"
// the report itself. Another format is a *field.Error naming "format".
func WriteVerify(w io.Writer, format Format, r *measure.VerifyReport) error {
	switch format {
	case JSON:
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return fmt.Errorf("reports: verify json: %w", err)
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case Table, Wide:
		return writeVerifyTable(w, r, format == Wide)
	}
	return format.Validate(VerifyFormats...)
}

// writeVerifyTable renders r into memory and writes it to out in one write,
// whose error it returns. Unless wide, lines fit TableWidth: the families'
// notes go under the table and sentences are wrapped.
func writeVerifyTable(out io.Writer, r *measure.VerifyReport, wide bool) error {
	var b strings.Builder
	w := &b
	width := TableWidth
	if wide {
		width = 0
	}
	line := func(format string, a ...any) { fmt.Fprintln(w, wrapText(fmt.Sprintf(format, a...), width, 2)) }
	line("ratelab verify: %s — %s: %s", r.Target, r.LimitDesc, strings.ToUpper(string(r.Verdict)))
	if len(r.Limits) > 0 {
		line("every limit at once: %s", strings.Join(r.Limits, ", "))
	}
	for _, l := range r.PerLimit {
		line("  %s", LimitLine(l))
	}
	if p := PartsLine(r); p != "" {
		line("%s", p)
	}
	for _, n := range r.Notes {
		line("note: %s", n)
	}
	tables := []measure.LimitResult{{Families: r.Families}}
	if len(r.PerLimit) > 0 {
		tables = r.PerLimit
	}
	for _, t := range tables {
		if t.Limit != "" {
			fmt.Fprintf(w, "\n%s:\n", t.Limit)
		}
		if !wide {
			if err := writeVerifyFamiliesFitted(w, t.Families); err != nil {
				return err
			}
		} else if err := writeVerifyFamiliesWide(w, t.Families); err != nil {
			return err
		}
	}
	// the duration on a line of its own: how the sentence after it wraps
	// never depends on how long the verification took
	line("%d decisions, %d errors, %.1fs", r.Decisions, r.Errors, float64(r.DurationMS)/1000)
	if r.SkewSensitivity > 0 {
		line("skew sensitivity: client clocks off by ±%gms let it accept %.2fx the limit in one true window", r.SkewDeltaMS, r.SkewSensitivity)
	}
	for _, e := range r.ErrorSamples {
		line("error: %s", e)
	}
	ces := []*measure.CounterExample{r.CounterExample}
	if len(r.PerLimit) > 0 {
		ces = ces[:0]
		for _, l := range r.PerLimit {
			ces = append(ces, l.CounterExample)
		}
	}
	for i, c := range ces {
		if c == nil {
			continue
		}
		of := ""
		if len(r.PerLimit) > 0 {
			of = " of " + r.PerLimit[i].Limit
		}
		writeCounterExample(w, c, of, c == r.CounterExample, width, r.Dir)
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// writeCounterExample writes c under the title "COUNTER-EXAMPLE" + of,
// sentences wrapped at width (0: not wrapped); main says c is the
// report's own (the one --replay sends), not only one limit's; dir is
// where verify.json was written ("" when it was not).
//
// The requests listed are those the failure depends on: every request of
// a minimal trace (no single one can be dropped: a first-hit window's
// opening request with the rest), else the accepted decisions of the
// window that broke. Times are from the aligned window boundary, or from
// the trace's first request when the target's windows start at a hit
// (CounterExample.FromHit).
func writeCounterExample(w io.Writer, c *measure.CounterExample, of string, main bool, width int, dir string) {
	fmt.Fprintf(w, "\n%s\n  %s\n", wrapText(fmt.Sprintf("COUNTER-EXAMPLE%s (%s) — family %s, trial %q:", of, strings.ToUpper(string(c.Kind)), c.Family, c.Trial), width, 2),
		wrapText(c.Explain, width-2, 2))
	origin, from := c.Origin(), TimesFrom(c)
	if c.Kind == measure.Violated {
		at := newTimeScale(c.StartUS-origin, c.EndUS-origin)
		where := fmt.Sprintf("window: %s to %s from %s", at.format(c.StartUS-origin), at.format(c.EndUS-origin), from)
		if c.FromHit {
			where += " (the limiter reads no clock: its windows start at a key's hit, not at aligned boundaries)"
		}
		fmt.Fprintln(w, "  "+wrapText(where, width-2, 4))
	}
	rows, head := counterExampleRows(c)
	if len(rows) > 0 {
		fmt.Fprintln(w, "  "+wrapText(head, width-2, 4))
		var tw [4]int
		for _, r := range rows {
			for i := range tw {
				tw[i] = max(tw[i], utf8.RuneCountInString(r[i]))
			}
		}
		for _, r := range rows {
			line := fmt.Sprintf("    %s  %s  cost %s  client %s", padLeft(r[0], tw[0]), padRight(r[1], tw[1]), padRight(r[2], tw[2]), padRight(r[3], tw[3]))
			if r[4] != "" {
				line += "  " + r[4]
			}
			fmt.Fprintln(w, strings.TrimRight(line, " "))
		}
	}
	writeInterleaving(w, c)
	if t := c.Trace; t != nil {
		var tl strings.Builder
		fmt.Fprintf(&tl, "  trace: %d requests", len(t.Requests))
		if t.Shrunk {
			fmt.Fprintf(&tl, ", shrunk from %d in %d replays", t.FromRequests, t.Replays)
			if t.Minimal {
				fmt.Fprint(&tl, " (minimal)")
			}
		}
		var cmds []string // on lines of their own, never wrapped: to copy whole
		switch {
		case !main:
			fmt.Fprint(&tl, "; kept in verify.json under per_limit")
		case dir != "": // written with --out, beside verify.json
			cmds = append(cmds, "replay it: ratelab verify --replay "+filepath.Join(dir, "verify.json"))
			if t.CSV != "" {
				cmds = append(cmds, "traffic file: "+filepath.Join(dir, t.CSV))
			}
		default:
			fmt.Fprint(&tl, "; --out keeps it in verify.json for ratelab verify --replay")
		}
		fmt.Fprintln(w, "  "+wrapText(strings.TrimPrefix(tl.String(), "  "), width-2, 4))
		for _, c := range cmds {
			fmt.Fprintln(w, "  "+c)
		}
	}
}

// TimesFrom names the instant c's times are shown from: "the first
// request" when its windows start at a hit (FromHit), else "the aligned
// window boundary".
func TimesFrom(c *measure.CounterExample) string {
	if c.FromHit {
		return "the first request"
	}
	return "the aligned window boundary"
}

// counterExampleRows are the requests a person reads in c, as cells:
// time (from c.Origin()), key, cost, client, and a note ("accepted, in
// the window", "denied"; "" when every row is in the window), with the
// line that heads them. A minimal trace is listed whole; otherwise the
// decisions of the window (a starvation's: none).
func counterExampleRows(c *measure.CounterExample) (rows [][5]string, head string) {
	origin := c.Origin()
	from := TimesFrom(c)
	if from == "the aligned window boundary" {
		from = "the boundary"
	}
	if t := c.Trace; t != nil && t.Minimal && c.Kind == measure.Violated && len(t.Requests) > 0 {
		inWindow := map[string]bool{}
		for _, d := range c.Decisions {
			inWindow[d.Key] = true
		}
		var in int
		for _, s := range t.Requests {
			note := "denied"
			if s.Allowed {
				note = "accepted"
				if inWindow[s.Key] && s.AtUS >= c.StartUS && s.AtUS <= c.EndUS {
					note, in = "accepted, in the window", in+1
				}
			}
			rows = append(rows, [5]string{"", s.Key, strconv.FormatInt(s.Cost, 10), strconv.Itoa(s.Client), note})
		}
		var ts []int64
		for _, s := range t.Requests {
			ts = append(ts, s.AtUS-origin)
		}
		at := newTimeScale(ts...)
		for i, s := range t.Requests {
			rows[i][0] = at.format(s.AtUS - origin)
		}
		if in == len(rows) {
			for i := range rows {
				rows[i][4] = ""
			}
			return rows, fmt.Sprintf("%d requests, every one accepted in the window and needed (time from %s, key, cost, client):", len(rows), from)
		}
		return rows, fmt.Sprintf("%d requests, every one needed: none can be dropped and still break the limit (time from %s, key, cost, client, answer):", len(rows), from)
	}
	var ts []int64
	for _, d := range c.Decisions {
		ts = append(ts, d.AtUS-origin, d.RecvUS-origin)
	}
	sc := newTimeScale(ts...)
	for _, d := range c.Decisions { // every one: the last closes the window
		at := sc.format(d.AtUS - origin)
		if d.RecvUS != 0 {
			at = fmt.Sprintf("sent %s, answered %s", sc.format(d.AtUS-origin), sc.format(d.RecvUS-origin))
		}
		rows = append(rows, [5]string{at, d.Key, strconv.FormatInt(d.Cost, 10), strconv.Itoa(d.Client), ""})
	}
	return rows, fmt.Sprintf("%d decisions (time from %s, key, cost, client):", len(rows), from)
}

// timeScale shows times of one list in one unit: µs under a
// millisecond, ms under a second, else s, with as many decimals as the
// list needs to show every time exactly (µs resolution).
type timeScale struct {
	unit     string
	div      float64
	decimals int
}

// newTimeScale is the scale for times (µs).
func newTimeScale(times ...int64) timeScale {
	var top int64
	for _, t := range times {
		top = max(top, t, -t)
	}
	sc := timeScale{unit: "µs", div: 1}
	step := int64(1)
	switch {
	case top >= 1_000_000:
		sc.unit, sc.div, step, sc.decimals = "s", 1e6, 1_000_000, 6
	case top >= 1000:
		sc.unit, sc.div, step, sc.decimals = "ms", 1e3, 1000, 3
	}
	// fewer decimals while every time stays exact
	for sc.decimals > 0 {
		exact := true
		q := int64(1)
		for range sc.decimals - 1 {
			q *= 10
		}
		unitOf := step / q // µs in one step of the last decimal kept
		for _, t := range times {
			if t%unitOf != 0 {
				exact = false
				break
			}
		}
		if !exact {
			break
		}
		sc.decimals--
	}
	return sc
}

// format is n µs in the scale's unit, signed: "+59.999989 s", "-1 µs".
func (sc timeScale) format(n int64) string {
	return fmt.Sprintf("%+.*f %s", sc.decimals, float64(n)/sc.div, sc.unit)
}

// padLeft and padRight pad s with spaces to n runes.
func padLeft(s string, n int) string {
	return strings.Repeat(" ", max(n-utf8.RuneCountInString(s), 0)) + s
}

func padRight(s string, n int) string {
	return s + strings.Repeat(" ", max(n-utf8.RuneCountInString(s), 0))
}

// LimitLine is the verdict on one of several limits in one line: "600 per
// 1h: VIOLATED 2.00x (greedy: 1200 accepted within 39m)", the worst window
// as first found; "60 per 1m: HOLDS (max 0.98 in any window)".
func LimitLine(l measure.LimitResult) string {
	head := fmt.Sprintf("%s: %s", l.Limit, strings.ToUpper(string(l.Verdict)))
	c := l.CounterExample
	switch {
	case c == nil || l.Verdict == measure.Inconclusive:
		return fmt.Sprintf("%s (max %.2f in any window)", head, l.MaxRatio)
	case c.Kind == measure.Violated:
		accepted, span := c.Accepted, c.EndUS-c.StartUS
		if f := c.Found; f != nil {
			accepted, span = f.Accepted, f.EndUS-f.StartUS
		}
		return fmt.Sprintf("%s %.2fx (%s: %d accepted within %s)", head, l.MaxRatio, c.Family, accepted, limit.FormatRough(time.Duration(span)*time.Microsecond))
	case c.Kind == measure.Starved:
		return fmt.Sprintf("%s %.2f of the ideal (%s): %s", head, c.Fidelity, c.Family, c.CauseDetail)
	}
	return fmt.Sprintf("%s (%s)", head, c.Family)
}

// PartsLine is the verdict told in its two parts, safety then liveness:
// "safety: HOLDS (max 1.00 in any window); liveness: STARVED — requests
// of cost ≥ 2 were never admitted (...)"; "" for a report without them
// (an older file, a replay).
func PartsLine(r *measure.VerifyReport) string {
	sf, lv := r.Safety, r.Liveness
	if sf == nil || lv == nil {
		return ""
	}
	safety := "safety: " + strings.ToUpper(string(sf.Verdict))
	switch sf.Verdict {
	case measure.Holds:
		safety += fmt.Sprintf(" (max %.2f in any window)", sf.MaxRatio)
	case measure.Violated:
		safety += fmt.Sprintf(" (%.2fx the limit in one window)", sf.MaxRatio)
	}
	live := "liveness: " + strings.ToUpper(string(lv.Verdict))
	switch lv.Verdict {
	case measure.Holds:
		live += fmt.Sprintf(" (fidelity %.2f or more under overload; floor %.2f)", lv.MinFidelity, lv.Floor)
	case measure.Starved:
		live += fmt.Sprintf(" — %s (fidelity %.2f, floor %.2f)", lv.Detail, lv.MinFidelity, lv.Floor)
	case measure.Interfered:
		live += " — traffic on one key denied requests on another"
	case measure.Skipped:
		live = "liveness: not judged (no overload trial ran)"
	}
	if !lv.Gated && lv.Verdict != measure.Holds && lv.Verdict != measure.Skipped {
		live += "; reported, not part of the verdict"
	}
	return safety + "; " + live
}

// verifyFamilyCells is a family's row: family, trials, clock, max in W /
// limit, min fidelity, verdict (and its note apart).
func verifyFamilyCells(f measure.FamilyResult) []string {
	ratio, fid := "", ""
	if f.Trials > 0 && f.Family != "isolation" {
		ratio = fmt.Sprintf("%.2f", f.MaxRatio)
	}
	if f.MinFidelity > 0 {
		fid = fmt.Sprintf("%.2f", f.MinFidelity)
	}
	return []string{f.Family, fmt.Sprint(f.Trials), f.Mode, ratio, fid, string(f.Verdict)}
}

// writeVerifyFamiliesFitted writes the families' table without the note
// column, then each family's note as a line under it.
func writeVerifyFamiliesFitted(w io.Writer, families []measure.FamilyResult) error {
	cols := []column{{"family", false, 0, ""}, {"trials", true, 0, ""}, {"clock", false, 0, ""}, {"max in W / L", true, 0, ""},
		{"min fidelity", true, 0, ""}, {"verdict", false, 0, ""}}
	var rows [][]string
	var notes []string
	for _, f := range families {
		rows = append(rows, verifyFamilyCells(f))
		if f.Note != "" {
			notes = append(notes, wrapText(f.Family+": "+f.Note, TableWidth, 2))
		}
	}
	t, _, err := fitTable(cols, rows, TableWidth)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, t)
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	return err
}

// writeVerifyFamiliesWide writes the families' table with every column.
func writeVerifyFamiliesWide(w io.Writer, families []measure.FamilyResult) error {
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignment(tw.AlignLeft))
	t.Header("family", "trials", "clock", "max in W / limit", "min fidelity", "verdict", "note")
	var rows [][]string
	for _, f := range families {
		rows = append(rows, append(verifyFamilyCells(f), f.Note))
	}
	if err := t.Bulk(rows); err != nil {
		return err
	}
	return t.Render()
}

// us renders µs as a signed duration.
func us(n int64) string {
	d := time.Duration(n) * time.Microsecond
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}
