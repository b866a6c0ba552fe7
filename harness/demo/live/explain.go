package live

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// WriteExplained writes a blank line and then each paragraph of ps to w,
// wrapped (Wrap) to width columns, at least 60; a width <= 0 (not a
// terminal, see Terminal) wraps at 100. Errors come from w.
func WriteExplained(w io.Writer, ps []string, width int) error {
	if width <= 0 {
		width = 100
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	for _, p := range ps {
		if _, err := fmt.Fprintln(w, Wrap(p, max(width, 60))); err != nil {
			return err
		}
	}
	return nil
}

// PageExplained writes pages to w as WriteExplained writes paragraphs,
// wrapped to width columns (at least 40), one page at a time, each when
// asked for: before each it asks on one line for Enter (show it) or q
// (stop), and reads a line from in, so what is on the screen stays there
// until the reader turns to the next page. End of input, or a line
// starting with q, stops it. names label the pages in the prompt ("2/6:
// sliding-log"). Errors come from w and in.
func PageExplained(w io.Writer, in io.Reader, pages [][]string, names []string, width int) error {
	if width <= 0 {
		width = 100
	}
	width = max(width, 40)
	r := bufio.NewReader(in)
	for i, page := range pages {
		label := fmt.Sprintf("%d/%d", i+1, len(pages))
		if i < len(names) && names[i] != "" {
			label += ": " + names[i]
		}
		verb := "why"
		if i > 0 {
			verb = "next"
		}
		if _, err := io.WriteString(w, truncate(fmt.Sprintf("\n[Enter: %s (%s) · q Enter: stop] ", verb, label), width)); err != nil {
			return err
		}
		line, err := r.ReadString('\n')
		if strings.HasPrefix(strings.TrimSpace(line), "q") || err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		for j, p := range page {
			if j > 0 {
				if _, err := fmt.Fprintln(w); err != nil {
					return err
				}
			}
			if _, err := io.WriteString(w, Wrap(p, width)); err != nil {
				return err
			}
		}
	}
	return nil
}
