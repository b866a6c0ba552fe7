package reports

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ratelab/ratelab/measure"
)

// Figure is one plot to inline in report.html: its name (the file name
// without extension, shown as the caption) and its SVG document.
type Figure struct {
	Name string
	SVG  []byte
	// Caption, when set, is shown under the figure instead of Name.
	Caption string
	// Beside shows the figure at half the page's width, beside the next
	// or previous figure that is Beside too (a pair to compare).
	Beside bool
}

// HTMLDoc is one self-contained HTML report: what WriteHTMLDoc renders.
// Every command that writes results builds one (WriteHTML for run and demo
// results, WriteCapacityHTML, WriteVerifyHTML).
type HTMLDoc struct {
	Title string
	// Incomplete, when set, is shown first: why the run stopped early.
	Incomplete string
	// Config is the run's configuration and Redis as label/value pairs.
	Config [][2]string
	// Verdicts, one per algorithm or target.
	Verdicts []HTMLVerdict
	// Explain is a numbered narrative ("What happened").
	Explain []string
	Tables  []HTMLTable
	// Notes are sentences under the tables.
	Notes   []string
	Figures []Figure
	// FiguresFirst shows the figures right after the verdicts (a
	// verification's counter-example); otherwise they come last.
	FiguresFirst bool
}

// HTMLVerdict is one verdict line: Name held the property or not, and why.
type HTMLVerdict struct {
	Name string
	Held bool
	Text string
}

// HTMLTable is a table with a title; Right marks the columns to right-align
// (numbers); a row with Over set is highlighted (over the limit).
type HTMLTable struct {
	Title  string
	Header []string
	Right  []bool
	Rows   []HTMLRow
	// Key explains the columns, under the table.
	Key string
}

// HTMLRow is one table row.
type HTMLRow struct {
	Cells []string
	Over  bool
}

// WriteHTML writes report.html for r to w: one self-contained page (inline
// CSS, plots inlined as SVG, no scripts, no external files), readable
// offline. It holds the run's configuration and Redis, a verdict per
// algorithm (held / exceeded the limit, with the worst ratio over its
// scenarios), the results table (the columns of the text table, units in
// the headers), for `ratelab demo` results the narrative of Explain, and the
// figures in order. A figure that is not an SVG document is an error; other
// errors come from w.
func WriteHTML(w io.Writer, r *measure.Results, figures []Figure) error {
	if r == nil {
		return fmt.Errorf("reports: no results to write")
	}
	cmd := r.Command
	if cmd == "" {
		cmd = "run"
	}
	doc := HTMLDoc{Title: "ratelab " + cmd + " report", Config: configItems(r), Verdicts: algorithmVerdicts(r), Figures: figures}
	if !r.Complete {
		doc.Incomplete = incompleteText(r.Error)
	}
	t := HTMLTable{Title: "Results",
		Header: []string{"algorithm", "scenario", "limit", "offered (cost, total)", "accepted (cost, total)", "max in W (cost, one window)", "ratio (max in W / L)",
			"ideal (cost, total)", "fidelity (accepted / ideal)", "memory", "keys", "p50 µs", "p99 µs", "errors (requests)"},
		Right: []bool{false, false, false, true, true, true, true, true, true, true, true, true, true, true},
		Key:   strings.ReplaceAll(strings.ReplaceAll(columnKey, "*", ""), "\n", " "),
	}
	for _, row := range r.Results {
		t.Rows = append(t.Rows, HTMLRow{Over: row.Ratio > 1, Cells: []string{
			row.Algorithm, row.Scenario, limitDesc(row),
			strconv.FormatInt(row.Offered, 10), strconv.FormatInt(row.Accepted, 10), strconv.FormatInt(row.MaxInWindow, 10),
			FormatFixed(row.Ratio, 2), strconv.FormatInt(row.Ideal, 10), FormatFixed(row.Fidelity, 2),
			formatBytes(row.MemoryBytes), strconv.FormatInt(row.Keys, 10),
			strconv.FormatInt(row.P50US, 10), strconv.FormatInt(row.P99US, 10), strconv.FormatInt(row.Errors, 10),
		}})
	}
	doc.Tables = []HTMLTable{t}
	if pk := perKeyHTML(r); pk != nil {
		doc.Tables = append(doc.Tables, *pk)
		doc.Notes = append(doc.Notes, trafficLines(r)...)
	}
	if r.Command == "demo" {
		doc.Explain = Explain(r)
	}
	return WriteHTMLDoc(w, doc)
}

// WriteHTMLDoc renders doc as one self-contained HTML page. A figure that
// is not an SVG document is an error; other errors come from w.
func WriteHTMLDoc(w io.Writer, doc HTMLDoc) error {
	page := htmlPage{HTMLDoc: doc}
	page.Tables = make([]HTMLTable, len(doc.Tables))
	for i, t := range doc.Tables {
		t = dropEmptyColumns(t)
		n := len(t.Header)
		for _, r := range t.Rows {
			n = max(n, len(r.Cells))
		}
		t.Right = append(append([]bool(nil), t.Right...), make([]bool, max(n-len(t.Right), 0))...)
		page.Tables[i] = t
	}
	for _, f := range doc.Figures {
		svg, err := inlineSVG(f.SVG)
		if err != nil {
			return fmt.Errorf("reports: figure %s: %w", f.Name, err)
		}
		caption := f.Caption
		if caption == "" {
			caption = f.Name
		}
		page.Inline = append(page.Inline, htmlFigure{Name: f.Name, SVG: svg, Caption: caption, Half: f.Beside})
	}
	var b bytes.Buffer
	if err := htmlTemplate.Execute(&b, page); err != nil {
		return fmt.Errorf("reports: report.html: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// dropEmptyColumns is t without the columns whose every row's cell is
// empty (a column nobody could read anything in); t as it is when it has
// no rows.
func dropEmptyColumns(t HTMLTable) HTMLTable {
	if len(t.Rows) == 0 {
		return t
	}
	var keep []int
	for c := range t.Header {
		for _, r := range t.Rows {
			if c < len(r.Cells) && strings.TrimSpace(r.Cells[c]) != "" {
				keep = append(keep, c)
				break
			}
		}
	}
	if len(keep) == len(t.Header) {
		return t
	}
	out := t
	out.Header, out.Right, out.Rows = nil, nil, nil
	for _, c := range keep {
		out.Header = append(out.Header, t.Header[c])
		out.Right = append(out.Right, c < len(t.Right) && t.Right[c])
	}
	for _, r := range t.Rows {
		row := HTMLRow{Over: r.Over}
		for _, c := range keep {
			cell := ""
			if c < len(r.Cells) {
				cell = r.Cells[c]
			}
			row.Cells = append(row.Cells, cell)
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}

// WriteCapacityHTML writes report.html for capacity results: the
// configuration, the memory-per-key table and its notes, and the figures.
func WriteCapacityHTML(w io.Writer, r *measure.CapacityResults, figures []Figure) error {
	if r == nil {
		return fmt.Errorf("reports: no capacity results to write")
	}
	doc := HTMLDoc{Title: "ratelab capacity report", Figures: figures, Notes: capacityNotes(r)}
	if !r.Complete {
		doc.Incomplete = incompleteText(r.Error)
	}
	doc.Config = [][2]string{
		{"algorithms", orNone(strings.Join(r.Config.Algorithms, ", "))},
		{"limits", joinInts(r.Config.Limits)},
		{"keys (N)", fmt.Sprintf("%d wanted, budget %d script calls per algorithm and limit", r.Config.Keys, r.Config.Budget)},
		{"active keys (M)", strconv.FormatInt(r.Config.ActiveKeys, 10)},
		{"window", FormatWindow(r.Config.WindowMS)},
		{"key prefix", orNone(r.Config.Prefix)},
		{"Redis", strings.ReplaceAll(redisDesc(r.Redis), "`", "")},
		{"started at", r.StartedAt.UTC().Format(time.RFC3339)},
		{"duration", (time.Duration(r.DurationMS) * time.Millisecond).String()},
	}
	t := HTMLTable{Title: "Memory per key"}
	for _, h := range capacityHeader(r) {
		t.Header = append(t.Header, fmt.Sprint(h))
	}
	for i := range t.Header {
		t.Right = append(t.Right, i != 0 && i != 3)
	}
	for _, cells := range capacityRows(r, noEscape) {
		t.Rows = append(t.Rows, HTMLRow{Cells: cells})
	}
	doc.Tables = []HTMLTable{t}
	return WriteHTMLDoc(w, doc)
}

// WriteVerifyHTML writes report.html for a verification: the verdict, the
// families' table and the counter-example.
func WriteVerifyHTML(w io.Writer, r *measure.VerifyReport) error {
	return WriteVerifyHTMLFigures(w, r, nil)
}

// WriteVerifyHTMLFigures is WriteVerifyHTML with figures (SVG documents,
// as publish.WriteVerifyDir draws them) shown after the verdict, before the tables.
func WriteVerifyHTMLFigures(w io.Writer, r *measure.VerifyReport, figures []Figure) error {
	if r == nil {
		return fmt.Errorf("reports: no verification to write")
	}
	doc := HTMLDoc{Title: "ratelab verify report: " + r.Target, Figures: figures, FiguresFirst: true}
	doc.Config = [][2]string{
		{"target", r.Target}, {"limit", r.LimitDesc}, {"clock", r.Clock},
		{"decisions", fmt.Sprintf("%d (%d errors)", r.Decisions, r.Errors)},
		{"duration", (time.Duration(r.DurationMS) * time.Millisecond).String()},
	}
	v := HTMLVerdict{Name: r.Target, Held: r.Verdict == measure.Holds, Text: strings.ToUpper(string(r.Verdict))}
	if c := r.CounterExample; c != nil {
		v.Text += ": " + c.Explain + fmt.Sprintf(" (family %s, trial %q)", c.Family, c.Trial)
	}
	doc.Verdicts = []HTMLVerdict{v}
	t := HTMLTable{Title: "Families", Header: []string{"family", "trials", "clock", "max in W / limit", "min fidelity", "verdict", "note"},
		Right: []bool{false, true, false, true, true, false, false}}
	for _, f := range r.Families {
		ratio, fid := "", ""
		if f.Trials > 0 && f.Family != "isolation" {
			ratio = FormatFixed(f.MaxRatio, 2)
		}
		if f.MinFidelity > 0 {
			fid = FormatFixed(f.MinFidelity, 2)
		}
		t.Rows = append(t.Rows, HTMLRow{Over: f.Verdict != measure.Holds && f.Verdict != measure.Skipped,
			Cells: []string{f.Family, strconv.Itoa(f.Trials), f.Mode, ratio, fid, string(f.Verdict), f.Note}})
	}
	doc.Tables = []HTMLTable{t}
	if r.SkewSensitivity > 0 {
		doc.Notes = append(doc.Notes, fmt.Sprintf("skew sensitivity: client clocks ±%gms apart let it accept %.2fx the limit in one true window", r.SkewDeltaMS, r.SkewSensitivity))
	}
	doc.Notes = append(doc.Notes, r.ErrorSamples...)
	if c := r.CounterExample; c != nil {
		if rows, head := counterExampleRows(c); len(rows) > 0 {
			from := TimesFrom(c)
			ce := HTMLTable{Title: "Counter-example", Header: []string{"time from " + from, "key", "cost", "client", "answer"},
				Right: []bool{true, false, true, true, false}, Key: strings.TrimSuffix(head, ":")}
			for _, r := range rows {
				ce.Rows = append(ce.Rows, HTMLRow{Cells: r[:], Over: strings.HasSuffix(r[4], "in the window")})
			}
			doc.Tables = append(doc.Tables, ce)
		}
	}
	return WriteHTMLDoc(w, doc)
}

type htmlPage struct {
	HTMLDoc
	Inline []htmlFigure
}

type htmlFigure struct {
	Name, Caption string
	SVG           template.HTML
	Half          bool
}

// FigureCaption says in a sentence what the plot named name (a file name
// without extension, as publish.WriteDir and publish.WriteVerifyDir write them) shows; ""
// for a name it does not know.
func FigureCaption(name string) string {
	switch {
	case strings.HasPrefix(name, "trailing-"):
		return strings.TrimPrefix(name, "trailing-") + ": how much each algorithm had accepted within the trailing window (t-W, t] at every instant t, against the limit L (dashed); red is accepted above L; the grey band is the window that holds the most, drawn at its width W; t is from the anchor, the aligned window boundary the scenario aims at (solid line), the other window boundaries dotted; under an algorithm that broke, what it accepted on each side of the boundary."
	case strings.HasPrefix(name, "timeline-"):
		return strings.TrimPrefix(name, "timeline-") + ": total accepted since the start (cumulative, not a window's count: compare the trailing-window plot with the limit)."
	case name == "ratio":
		return "The most accepted within any one window divided by the limit, per scenario and algorithm; above 1.0 the limit was exceeded."
	case name == "families":
		return "Each family's worst window against the limit (max in W / L); above 1.0 the family found a violation."
	case name == "counterexample-found":
		return "The worst window as the trials found it (the verdict's ratio): its accepted decisions against time (cumulative, one dot each), the limit dashed, the excess in red, the window that broke shaded."
	case name == "counterexample":
		return "The counter-example: the accepted decisions of the trial that broke the property against time (cumulative, one dot each), the limit dashed, the excess in red, the window that broke shaded; shrunk, the fewest requests that still break the limit."
	}
	return ""
}

// configItems is the run's configuration and Redis as label/value pairs.
func configItems(r *measure.Results) [][2]string {
	c := r.Config
	items := [][2]string{
		{"command", "ratelab " + r.Command},
		{"algorithms", orNone(strings.Join(c.Algorithms, ", "))},
		{"scenarios", orNone(strings.Join(c.Scenarios, ", "))},
	}
	if c.Limit != 0 || c.WindowMS != 0 {
		items = append(items, [2]string{"limit", fmt.Sprintf("%s per %s", orDefault(c.Limit), formatWindowOrDefault(c.WindowMS))})
	} else {
		items = append(items, [2]string{"limit", "each scenario's own"})
	}
	items = append(items,
		[2]string{"clock", orNone(c.Clock)},
		[2]string{"seed", strconv.FormatInt(c.Seed, 10)},
		[2]string{"key prefix", orNone(c.Prefix)},
		[2]string{"Redis", strings.ReplaceAll(redisDesc(r.Redis), "`", "")},
	)
	started := "unknown"
	if !r.StartedAt.IsZero() {
		started = r.StartedAt.UTC().Format(time.RFC3339)
	}
	items = append(items, [2]string{"started at", started},
		[2]string{"duration", (time.Duration(r.DurationMS) * time.Millisecond).String()})
	return items
}

// algorithmVerdicts says, per algorithm in row order, whether it kept every
// scenario within the limit, naming the worst scenario.
func algorithmVerdicts(r *measure.Results) []HTMLVerdict {
	var out []HTMLVerdict
	idx := map[string]int{}
	worst := map[string]measure.Row{}
	for _, row := range r.Results {
		i, ok := idx[row.Algorithm]
		if !ok {
			idx[row.Algorithm] = len(out)
			out = append(out, HTMLVerdict{Name: row.Algorithm, Held: true})
			i = len(out) - 1
		}
		if w, seen := worst[row.Algorithm]; !seen || row.Ratio > w.Ratio {
			worst[row.Algorithm] = row
		}
		if row.Ratio > 1 {
			out[i].Held = false
		}
	}
	for i := range out {
		w := worst[out[i].Name]
		if out[i].Held {
			out[i].Text = fmt.Sprintf("held: never more than the limit in one window (worst %sx, on %s)", FormatFixed(w.Ratio, 2), w.Scenario)
		} else {
			out[i].Text = fmt.Sprintf("exceeded the limit: %d accepted within one %s window on %s — %sx the limit of %d",
				w.MaxInWindow, FormatWindow(w.WindowMS), w.Scenario, FormatFixed(w.Ratio, 2), w.Limit)
			if why := WhyBroke(w); why != "" {
				out[i].Text += "; " + why
			}
		}
	}
	return out
}

var svgProlog = regexp.MustCompile(`(?s)^\s*(<\?xml.*?\?>\s*)?(<!--.*?-->\s*)*(<!DOCTYPE[^>]*>\s*)?`)

// inlineSVG strips an SVG document's XML prolog, comments before the root
// and DOCTYPE, so it can sit inside HTML.
func inlineSVG(doc []byte) (template.HTML, error) {
	s := svgProlog.ReplaceAllString(string(doc), "")
	if !strings.HasPrefix(s, "<svg") {
		return "", fmt.Errorf("not an SVG document")
	}
	return template.HTML(s), nil // #nosec: our own plots, written by gonum/plot
}

var htmlTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font: 15px/1.45 "Liberation Sans", Arial, Helvetica, sans-serif; color: #1a1a1a; margin: 2em auto; max-width: 78em; padding: 0 1.2em; }
h1 { font-size: 1.6em; margin-bottom: .2em; }
h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: .2em; }
.incomplete { background: #fde8e8; border: 1px solid #d55e00; padding: .6em .9em; }
dl.config { display: grid; grid-template-columns: max-content 1fr; gap: .15em 1.2em; margin: 0; }
dl.config dt { color: #555; } dl.config dd { margin: 0; font-family: "Liberation Mono", monospace; font-size: .92em; }
ul.verdicts { list-style: none; padding: 0; }
ul.verdicts li { padding: .35em .6em; margin: .25em 0; border-left: 5px solid #009e73; background: #f1faf6; }
ul.verdicts li.over { border-color: #d55e00; background: #fdf1ea; }
ul.verdicts b { display: inline-block; min-width: 11em; }
table { border-collapse: collapse; font-size: .9em; width: 100%; }
th, td { padding: .3em .55em; border-bottom: 1px solid #e4e4e4; }
th { background: #f4f4f4; text-align: center; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.over td { background: #fdf1ea; }
ul.notes { color: #444; font-size: .9em; }
p.key { color: #555; font-size: .85em; }
ol.explain li { margin: .4em 0; }
figure { margin: 1.2em 0; } figure.half { display: inline-block; width: 48.5%; vertical-align: top; margin-right: 1%; } figure svg { max-width: 100%; height: auto; display: block; }
figcaption { color: #555; font-size: .85em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{if .Incomplete}}<p class="incomplete"><b>INCOMPLETE:</b> {{.Incomplete}}</p>{{end}}
<h2>Configuration</h2>
<dl class="config">{{range .Config}}<dt>{{index . 0}}</dt><dd>{{index . 1}}</dd>{{end}}</dl>
{{if .Verdicts}}<h2>Verdicts</h2>
<ul class="verdicts">{{range .Verdicts}}<li class="{{if .Held}}held{{else}}over{{end}}" data-algorithm="{{.Name}}"><b>{{.Name}}</b> {{.Text}}</li>{{end}}</ul>{{end}}
{{if .FiguresFirst}}{{template "figures" .}}{{end}}
{{if .Explain}}<h2>What happened</h2>
<ol class="explain">{{range .Explain}}<li>{{.}}</li>{{end}}</ol>{{end}}
{{range .Tables}}{{$t := .}}<h2>{{.Title}}</h2>
{{if .Rows}}<table>
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}<tr class="{{if .Over}}over{{else}}ok{{end}}">{{range $i, $c := .Cells}}<td{{if index $t.Right $i}} class="n"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{with .Key}}<p class="key">{{.}}</p>{{end}}{{else}}<p>No results.</p>{{end}}
{{end}}{{if .Notes}}<ul class="notes">{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if not .FiguresFirst}}{{template "figures" .}}{{end}}
</body>
</html>
{{define "figures"}}{{if .Inline}}<h2>Plots</h2>
{{range .Inline}}<figure id="{{.Name}}"{{if .Half}} class="half"{{end}}>{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>
{{end}}{{end}}{{end}}`))
