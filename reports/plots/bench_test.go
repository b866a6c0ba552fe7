package plots

import (
	"math"
	"reflect"
	"testing"
)

func TestNines(t *testing.T) {
	for _, c := range []struct{ q, want float64 }{{0, 0}, {0.9, 1}, {0.99, 2}, {0.999, 3}, {1, 5}} {
		if got := nines(c.q); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("nines(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	var labels []string
	for _, tk := range (ninesTicks{}).Ticks(0, 5.2) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if want := []string{"0%", "50%", "90%", "99%", "99.9%", "99.99%", "99.999%"}; !reflect.DeepEqual(labels, want) {
		t.Errorf("labels %v, want %v", labels, want)
	}
}

func TestFormatMicrosAndSI(t *testing.T) {
	for _, c := range []struct {
		v          float64
		micro, rps string
	}{{10, "10 µs", "10"}, {1000, "1 ms", "1.0k"}, {61234, "61.234 ms", "61.2k"}, {1e6, "1 s", "1.00M"}} {
		if got := formatMicros(c.v); got != c.micro {
			t.Errorf("formatMicros(%v) = %q, want %q", c.v, got, c.micro)
		}
		if got := formatSI(c.v); got != c.rps {
			t.Errorf("formatSI(%v) = %q, want %q", c.v, got, c.rps)
		}
	}
}
