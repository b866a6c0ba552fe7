package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
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
	case Table:
		return writeVerifyTable(w, r)
	}
	return format.Validate(VerifyFormats...)
}

// writeVerifyTable renders r into memory and writes it to out in one write,
// whose error it returns.
func writeVerifyTable(out io.Writer, r *measure.VerifyReport) error {
	var b strings.Builder
	w := &b
	fmt.Fprintf(w, "ratelab verify: %s — %s: %s\n", r.Target, r.LimitDesc, strings.ToUpper(string(r.Verdict)))
	if len(r.Limits) > 0 {
		fmt.Fprintf(w, "every limit at once: %s\n", strings.Join(r.Limits, ", "))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignment(tw.AlignLeft))
	t.Header("family", "trials", "clock", "max in W / limit", "min fidelity", "verdict", "note")
	var rows [][]string
	for _, f := range r.Families {
		ratio, fid := "", ""
		if f.Trials > 0 && f.Family != "isolation" {
			ratio = fmt.Sprintf("%.2f", f.MaxRatio)
		}
		if f.MinFidelity > 0 {
			fid = fmt.Sprintf("%.2f", f.MinFidelity)
		}
		rows = append(rows, []string{f.Family, fmt.Sprint(f.Trials), f.Mode, ratio, fid, string(f.Verdict), f.Note})
	}
	if err := t.Bulk(rows); err != nil {
		return err
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d decisions, %d errors, %.1fs", r.Decisions, r.Errors, float64(r.DurationMS)/1000)
	if r.SkewSensitivity > 0 {
		fmt.Fprintf(w, "; skew sensitivity: client clocks off by ±%gms let it accept %.2fx the limit in one true window", r.SkewDeltaMS, r.SkewSensitivity)
	}
	fmt.Fprintln(w)
	for _, e := range r.ErrorSamples {
		fmt.Fprintf(w, "error: %s\n", e)
	}
	if c := r.CounterExample; c != nil {
		fmt.Fprintf(w, "\nCOUNTER-EXAMPLE (%s) — family %s, trial %q:\n  %s\n", strings.ToUpper(string(c.Kind)), c.Family, c.Trial, c.Explain)
		if c.Kind == measure.Violated {
			fmt.Fprintf(w, "  window: %s to %s from the aligned window boundary\n", us(c.StartUS), us(c.EndUS))
		}
		if len(c.Decisions) > 0 {
			fmt.Fprintf(w, "  %d decisions (time from the boundary, key, cost, client):\n", len(c.Decisions))
			for _, d := range c.Decisions { // every one: the last closes the window
				at := us(d.AtUS)
				if d.RecvUS != 0 {
					at = fmt.Sprintf("sent %s, answered %s", us(d.AtUS), us(d.RecvUS))
				}
				fmt.Fprintf(w, "    %s  %s  cost %d  client %d\n", at, d.Key, d.Cost, d.Client)
			}
		}
		writeInterleaving(w, c)
		if t := c.Trace; t != nil {
			fmt.Fprintf(w, "  trace: %d requests", len(t.Requests))
			if t.Shrunk {
				fmt.Fprintf(w, ", shrunk from %d in %d replays", t.FromRequests, t.Replays)
				if t.Minimal {
					fmt.Fprint(w, " (minimal)")
				}
			}
			if t.CSV != "" { // written with --out, beside verify.json
				fmt.Fprintf(w, "; replay it with ratelab verify --replay verify.json; traffic file %s", t.CSV)
			} else {
				fmt.Fprint(w, "; --out keeps it in verify.json for ratelab verify --replay")
			}
			fmt.Fprintln(w)
		}
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// us renders µs as a signed duration.
func us(n int64) string {
	d := time.Duration(n) * time.Microsecond
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}
