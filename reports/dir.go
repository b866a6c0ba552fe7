package reports

import (
	"bytes"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"

	"github.com/ratelab/ratelab/measure"
)

// WriteReport writes report.md for r to w: a title, the run's configuration
// and Redis (mode, address, version), start time (UTC, RFC 3339) and
// duration, the Markdown results table with a key to its columns, the
// verdicts (rows whose ratio is above 1) and one Markdown image per entry of
// plots, in order. Plot paths are used as given (keep them relative to the
// report's directory) and the image's alt text is the file name without its
// extension. Errors come from w.
func WriteReport(w io.Writer, r *measure.Results, plots []string) error {
	if r == nil {
		return fmt.Errorf("reports: no results to write")
	}
	var b bytes.Buffer
	cmd := r.Command
	if cmd == "" {
		cmd = "run"
	}
	fmt.Fprintf(&b, "# ratelab %s report\n\n", escapeMarkdown(cmd))
	writeIncomplete(&b, r.Complete, r.Error, true)

	c := r.Config
	var items []string
	item := func(name, value string) { items = append(items, name+": "+value) }
	item("algorithms", orNone(codeList(c.Algorithms)))
	item("scenarios", orNone(codeList(c.Scenarios)))
	if c.Limit != 0 || c.WindowMS != 0 {
		item("limit override", fmt.Sprintf("%s per %s", orDefault(c.Limit), formatWindowOrDefault(c.WindowMS)))
	} else {
		item("limit override", "none (each scenario's own)")
	}
	item("clock", orNone(code(c.Clock)))
	item("seed", fmt.Sprint(c.Seed))
	item("key prefix", orNone(code(c.Prefix)))
	writeRunHeader(&b, r.Header, items)

	b.WriteString("\n## Results\n\n")
	if len(r.Results) == 0 {
		b.WriteString("No results.\n")
	} else {
		complete := *r
		complete.Complete = true // the INCOMPLETE line is already above
		if err := writeMarkdown(&b, &complete); err != nil {
			return err
		}
		if len(verdicts(r)) == 0 {
			b.WriteString("\nNo algorithm accepted more than its limit within any one window.\n")
		}
		b.WriteString("\n" + columnKey)
		if hasPerKey(r) {
			b.WriteString("\n" + perKeyColumns)
		}
	}

	if len(plots) > 0 {
		b.WriteString("\n## Plots\n\n")
		for _, p := range plots {
			name := strings.TrimSuffix(path.Base(filepath.ToSlash(p)), path.Ext(p))
			fmt.Fprintf(&b, "![%s](%s)\n\n", escapeMarkdown(name), markdownURL(p))
		}
	}
	out := bytes.TrimRight(b.Bytes(), "\n")
	out = append(out, '\n')
	_, err := w.Write(out)
	return err
}

// columnKey explains the table's columns (DESIGN.md's metric definitions).
const columnKey = `Columns: *offered*, *accepted* and *ideal* are totals over the scenario and
*max in W* is one window's, all in cost units (a request of cost 3 counts 3); *max in W*
is the largest accepted cost whose decision times fit in one window (t-W, t];
*ratio* = max in W / limit (above 1: the limit was exceeded); *ideal* is what an
exact sliding-window log accepts at the same times and *fidelity* = accepted /
ideal (below 1: legitimate traffic was refused); *memory* is MEMORY USAGE
(SAMPLES 0) summed over the algorithm's keys; *p50 µs* and *p99 µs* are decision
latencies; *errors* counts failed decisions (requests).
`

// FileSafe maps a scenario name to a file-name part: letters, digits,
// '-', '_' and '.' are kept, anything else becomes '_'.
func FileSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
		default:
			b[i] = '_'
		}
	}
	if len(b) == 0 || strings.Trim(string(b), ".") == "" {
		return "_"
	}
	return string(b)
}

func redisDesc(ri measure.RedisInfo) string {
	version := ri.Version
	if version == "" {
		version = "unknown version"
	}
	s := version
	if ri.Addr != "" {
		s += " at " + code(ri.Addr)
	}
	if ri.Mode != "" {
		s += " (" + ri.Mode + ")"
	}
	return s
}

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(s, "`", "'") + "`"
}

func codeList(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = code(s)
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func orDefault(n int64) string {
	if n == 0 {
		return "(scenario's limit)"
	}
	return fmt.Sprint(n)
}

func formatWindowOrDefault(ms int64) string {
	if ms == 0 {
		return "(scenario's window)"
	}
	return FormatWindow(ms)
}

// markdownURL makes a relative path usable as a Markdown link target.
func markdownURL(p string) string {
	p = filepath.ToSlash(p)
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29").Replace(p)
}
