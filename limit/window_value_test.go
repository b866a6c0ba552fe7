package limit

import (
	"testing"
	"time"
)

// A window flag takes days and is shown as FormatWindow writes it.
func TestWindowValue(t *testing.T) {
	var d time.Duration
	w := (*WindowValue)(&d)
	for _, c := range []struct {
		in, shown string
		want      time.Duration
	}{
		{"1d", "1d", 24 * time.Hour},
		{"90s", "1m30s", 90 * time.Second},
	} {
		if err := w.Set(c.in); err != nil || d != c.want || w.String() != c.shown {
			t.Errorf("Set(%q): %v, got %s shown %q; want %s shown %q", c.in, err, d, w.String(), c.want, c.shown)
		}
	}
	if err := w.Set("soon"); err == nil {
		t.Errorf("Set(\"soon\"): no error")
	}
}
