package live

import (
	"fmt"
	"io"
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
