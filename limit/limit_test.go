package limit

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/field"
)

func TestFormatWindow(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{time.Hour, "1h"},                               // not 1h0m0s
		{90 * time.Second, "1m30s"},                     // no zero units
		{250 * time.Millisecond, "250ms"},               // below a second: Go's form
		{1500 * time.Microsecond, "1.5ms"},              // fractions stay exact
		{Day, "1d"},                                     // days
		{7*Day + 12*time.Hour, "7d12h"},                 // largest unit first
		{time.Minute + 500*time.Millisecond, "1m500ms"}, // parses back with ParseDuration
		{10 * time.Second, "10s"},
		{-time.Hour, "-1h"},
	} {
		if got := FormatWindow(c.d); got != c.want {
			t.Errorf("FormatWindow(%d) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestFormatRough(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{39*time.Minute + 29*time.Second + 300*time.Millisecond, "39m29s"}, // whole seconds from a minute
		{2*time.Hour + 29*time.Second, "2h"},                               // whole minutes from an hour
		{4*time.Minute + 12*time.Second + 400*time.Millisecond, "4m12s"},
		{1549 * time.Millisecond, "1.5s"}, // tenths from a second
		{120*time.Millisecond + 400*time.Microsecond, "120ms"},
		{119 * time.Microsecond, "119µs"}, // under a millisecond: as it is
		{0, "0s"},
	} {
		if got := FormatRough(c.d); got != c.want {
			t.Errorf("FormatRough(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "1s", want: time.Second},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "1d", want: Day},
		{in: "7d", want: 7 * Day},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "1.5d", want: 36 * time.Hour},
		{in: "250ms", want: 250 * time.Millisecond},
		{in: "", bad: true},
		{in: "d", bad: true},
		{in: "-1d", want: -Day}, // negated whole: Validate judges it
		{in: "-1s", want: -time.Second},
		{in: "--1s", bad: true},
		{in: "1d-1h", bad: true},
		{in: "1w", bad: true},
		{in: "10", bad: true}, // a unit is required (as time.ParseDuration)
	} {
		got, err := ParseDuration(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, error %v", c.in, got, err, c.want, c.bad)
		}
	}
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Limit
		err  string // "" for none
	}{
		{in: "10/1s", want: Limit{Count: 10, Window: time.Second}},
		{in: "120/1m", want: Limit{Count: 120, Window: time.Minute}},
		{in: " 240 / 1h ", want: Limit{Count: 240, Window: time.Hour}},
		{in: "20 per 1h", want: Limit{Count: 20, Window: time.Hour}},
		{in: "1000/7d", want: Limit{Count: 1000, Window: 7 * Day}},
		{in: "10", err: `"10" is not COUNT/WINDOW (e.g. 10/1s)`},
		{in: "x/1s", err: `"x/1s": the count "x" is not an integer`},
		{in: "10/1x", err: `"10/1x": the window: time: unknown unit "x" in duration "1x"`}, // time's own error
		{in: "0/1s", err: `"0/1s": limit: must be >= 1, got 0`},
		{in: "10/1us", err: `"10/1us": window: must be >= 1ms, got 1µs`},
	} {
		got, err := Parse(c.in)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("Parse(%q): %v", c.in, err)
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("Parse(%q) error = %v, want %q", c.in, err, c.err)
		case got != c.want:
			t.Errorf("Parse(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestParseList(t *testing.T) {
	got, err := ParseList([]string{"10/1s", "120/1m", "240/1h"})
	if err != nil || len(got) != 3 || got[2] != (Limit{Count: 240, Window: time.Hour}) {
		t.Fatalf("ParseList = %v, %v", got, err)
	}
	if _, err := ParseList([]string{"10/1s", "0/1m"}); err == nil || err.Error() != `limits[2]: "0/1m": limit: must be >= 1, got 0` {
		t.Errorf("ParseList error = %v", err)
	}
}

func TestStringAndValidate(t *testing.T) {
	for _, c := range []struct {
		l          Limit
		str, field string // field "" when valid
	}{
		{Limit{Count: 20, Window: time.Hour}, "20 per 1h", ""},
		{Limit{Count: 50, Window: 10 * time.Second, Precision: time.Second}, "50 per 10s (precision 1s)", ""},
		{Limit{Count: 0, Window: time.Second}, "0 per 1s", "limit"},
		{Limit{Count: 1, Window: time.Microsecond}, "1 per 1µs", "window"},
		{Limit{Count: 1, Window: time.Second, Precision: time.Microsecond}, "1 per 1s (precision 1µs)", "precision"},
		{Limit{Count: 1, Window: time.Second, Precision: time.Minute}, "1 per 1s (precision 1m)", "precision"},
		{Limit{Count: 1, Window: time.Second, Precision: -1}, "1 per 1s", "precision"},
	} {
		if got := c.l.String(); got != c.str {
			t.Errorf("String() = %q, want %q", got, c.str)
		}
		err := c.l.Validate()
		name, _ := field.Name(err)
		if name != c.field {
			t.Errorf("%s: Validate() = %v, want a %q error", c.str, err, c.field)
		}
	}
	if err := ValidateList([]Limit{{Count: 1, Window: time.Second}, {Count: 1}}); err == nil ||
		err.Error() != "limits[2]: window: must be >= 1ms, got 0s" {
		t.Errorf("ValidateList = %v", err)
	}
}

func TestJSON(t *testing.T) {
	for _, c := range []struct {
		l    Limit
		json string
	}{
		{Limit{Count: 20, Window: time.Hour}, `{"count":20,"window_ms":3600000}`},
		{Limit{Count: 50, Window: 10 * time.Second, Precision: time.Second}, `{"count":50,"window_ms":10000,"precision_ms":1000}`},
	} {
		b, err := json.Marshal(c.l)
		if err != nil || string(b) != c.json {
			t.Errorf("Marshal(%v) = %s, %v; want %s", c.l, b, err, c.json)
		}
		var back Limit
		if err := json.Unmarshal(b, &back); err != nil || back != c.l {
			t.Errorf("Unmarshal(%s) = %+v, %v", b, back, err)
		}
	}
}

func TestParseFlags(t *testing.T) {
	cases := []struct {
		name      string
		ss        []string
		windowSet bool
		want      []Limit
		err       string // "" for none
	}{
		// a plain count takes the window given beside it
		{"count", []string{"20"}, true, []Limit{{Count: 20, Window: time.Second}}, ""},
		// pairs carry their own windows
		{"pairs", []string{"10/1s", "120/1m"}, false, []Limit{{Count: 10, Window: time.Second}, {Count: 120, Window: time.Minute}}, ""},
		// nothing given: no limits, no error (required is the caller's)
		{"none", nil, false, nil, ""},
		{"not a number", []string{"ten"}, false, nil, `limit: "ten" is not L or L/W (e.g. 20 or 10/1s)`},
		{"two counts", []string{"10", "20"}, false, nil, "limit: 10: several limits are given as L/W pairs (e.g. 10/1s and 120/1m)"},
		{"window twice", []string{"10/1s"}, true, nil, "limit: 10/1s: give the window in the pair or on its own, not both"},
		{"bad pair", []string{"0/1s"}, false, nil, `limit: "0/1s": limit: must be >= 1, got 0`},
	}
	for _, c := range cases {
		got, err := ParseFlags(c.ss, time.Second, c.windowSet)
		if c.err != "" {
			if name, _ := field.Name(err); err == nil || err.Error() != c.err || name != "limit" {
				t.Errorf("%s: error %v, want %q naming limit", c.name, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}

// a count in exponent form reaches the caller's bound, a
// window past ten years is refused with the bound (it overflowed the
// schedules: Int64N and makeslice panics in verify).
func TestParseCountAndMaxWindow(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		err  string
	}{
		{"100000", 100000, ""},
		{"1e18", 1_000_000_000_000_000_000, ""},
		{"2.5e3", 2500, ""},
		{"-1e3", -1000, ""},
		{"1e19", 0, "1e19 is out of range: at most 9223372036854775807"},
		{"99999999999999999999", 0, "out of range"},
		{"1.5", 0, "1.5 is not a whole number"},
		{"NaN", 0, "not an integer"},
		{"Inf", 0, "out of range"},
		{"0x10", 0, "not an integer"},
		{"ten", 0, "not an integer"},
	} {
		got, err := ParseCount(c.in)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseCount(%q) = %d, %v; want %d", c.in, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseCount(%q) = %d, %v; want an error holding %q", c.in, got, err, c.err)
		}
	}
	for _, s := range []string{"10/1000000h", "10/2562047h", "10/3651d"} {
		if _, err := Parse(s); err == nil || !strings.Contains(err.Error(), "window: at most 3650d (ten years)") {
			t.Errorf("Parse(%q): %v; want the ten-year bound", s, err)
		}
	}
	if _, err := Parse("10/3650d"); err != nil {
		t.Errorf("ten years refused: %v", err)
	}
	if _, err := ParseFlags([]string{"1e30"}, time.Second, true); err == nil || !strings.Contains(err.Error(), "limit: 1e30 is out of range") {
		t.Errorf("ParseFlags(1e30): %v", err)
	}
}
