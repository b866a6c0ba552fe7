// Package limit is ratelab's one rate limit value: at most Count cost
// units in any window of length Window, with the optional block length of
// bucketed counters. It parses the command line's and the target files'
// forms ("10/1s", "20 per 1h"), prints them one way ("20 per 1h") and
// checks them with one wording. It imports only the standard library and
// package field, so result data that knows no Redis can use it.
package limit

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ratelab/ratelab/field"
)

// MinWindow is the shortest window and the shortest precision any limiter
// takes: 1 ms (scripts get windows in whole milliseconds).
const MinWindow = time.Millisecond

// Day is the unit "d" of ParseDuration and FormatWindow: 24 hours.
const Day = 24 * time.Hour

// MaxWindow is the longest window any limiter takes: ten years (3650d).
// Longer ones overflow the microsecond arithmetic of the schedules and of
// the scripts' clocks.
const MaxWindow = 3650 * Day

// Limit is one rate limit: at most Count cost units accepted in any window
// of length Window. The zero Limit is not valid (see Validate).
type Limit struct {
	// Count is the number of cost units allowed per Window. Must be >= 1.
	Count int64
	// Window is the length of the window. Must be >= 1 ms.
	Window time.Duration
	// Precision is the block (sub-window) length of bucketed counters
	// (bucketed-hash), in 1 ms..Window. Zero means the limiter's own
	// default (Window/10 for bucketed-hash); the other algorithms ignore it.
	Precision time.Duration
}

// String renders the limit as "20 per 1h", with the precision when set:
// "50 per 10s (precision 1s)". Windows are written by FormatWindow.
func (l Limit) String() string {
	s := strconv.FormatInt(l.Count, 10) + " per " + FormatWindow(l.Window)
	if l.Precision > 0 {
		s += " (precision " + FormatWindow(l.Precision) + ")"
	}
	return s
}

// Validate checks Count >= 1, Window in 1 ms..MaxWindow and Precision 0
// or in 1 ms..Window. Its errors are field errors named "limit", "window" and
// "precision" (field.Error), e.g. "window: must be >= 1ms, got 500µs".
func (l Limit) Validate() error {
	switch {
	case l.Count < 1:
		return field.Errorf("limit", "must be >= 1, got %d", l.Count)
	case l.Window < MinWindow:
		return field.Errorf("window", "must be >= 1ms, got %s", FormatWindow(l.Window))
	case l.Window > MaxWindow:
		return field.Errorf("window", "at most %s (ten years), got %s", FormatWindow(MaxWindow), FormatWindow(l.Window))
	case l.Precision < 0 || l.Precision > l.Window:
		return field.Errorf("precision", "must be in 0..window (%s), got %s", FormatWindow(l.Window), FormatWindow(l.Precision))
	case l.Precision > 0 && l.Precision < MinWindow:
		return field.Errorf("precision", "must be >= 1ms (or 0: the limiter's default), got %s", FormatWindow(l.Precision))
	}
	return nil
}

// ValidateList checks every limit of ls (Validate); a bad one is named by
// its place, counting from 1: "limits[2]: window: must be >= 1ms, got 0s".
// An empty list is valid here: whether one is required is the caller's.
func ValidateList(ls []Limit) error {
	for i, l := range ls {
		if err := l.Validate(); err != nil {
			if len(ls) == 1 {
				return err
			}
			return &field.Error{Name: fmt.Sprintf("limits[%d]", i+1), Err: err}
		}
	}
	return nil
}

// Parse reads one limit: "COUNT/WINDOW" or "COUNT per WINDOW" (spaces
// around the separator are allowed), with WINDOW a duration of
// ParseDuration ("10/1s", "120/1m", "240 per 1h", "1000/1d"). The result
// is validated (Validate); Precision is zero. Errors say what was expected.
func Parse(s string) (Limit, error) {
	cs, ws, ok := strings.Cut(s, "/")
	if !ok {
		cs, ws, ok = strings.Cut(s, " per ")
	}
	if !ok {
		return Limit{}, fmt.Errorf("%q is not COUNT/WINDOW (e.g. 10/1s)", s)
	}
	n, err := ParseCount(strings.TrimSpace(cs))
	if err != nil {
		return Limit{}, fmt.Errorf("%q: the count %w", s, err)
	}
	w, err := ParseDuration(strings.TrimSpace(ws))
	if err != nil {
		return Limit{}, fmt.Errorf("%q: the window: %w", s, err)
	}
	l := Limit{Count: n, Window: w}
	if err := l.Validate(); err != nil {
		return Limit{}, fmt.Errorf("%q: %w", s, err)
	}
	return l, nil
}

// ParseList reads several limits with Parse, one per element, in order;
// an error names the element's place when there are several ("limits[2]").
func ParseList(ss []string) ([]Limit, error) {
	out := make([]Limit, 0, len(ss))
	for i, s := range ss {
		l, err := Parse(s)
		if err != nil {
			if len(ss) > 1 {
				return nil, fmt.Errorf("limits[%d]: %w", i+1, err)
			}
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// ParseFlags reads the limits of a command line: one plain COUNT, whose
// window is window, or any number of COUNT/WINDOW (Parse), whose windows
// are their own, so window must not also be given (windowSet false). No
// element gives no limits and no error (the caller decides whether limits
// are required). Errors are *field.Error naming "limit", saying what was
// expected; the values themselves are left to Validate.
func ParseFlags(ss []string, window time.Duration, windowSet bool) ([]Limit, error) {
	var out []Limit
	for _, s := range ss {
		if !strings.Contains(s, "/") && !strings.Contains(s, " per ") {
			n, err := ParseCount(strings.TrimSpace(s))
			switch {
			case errors.Is(err, ErrCountRange):
				return nil, field.Errorf("limit", "%w", err)
			case err != nil:
				return nil, field.Errorf("limit", "%q is not L or L/W (e.g. 20 or 10/1s)", s)
			case len(ss) > 1:
				return nil, field.Errorf("limit", "%s: several limits are given as L/W pairs (e.g. 10/1s and 120/1m)", s)
			}
			out = append(out, Limit{Count: n, Window: window})
			continue
		}
		if windowSet {
			return nil, field.Errorf("limit", "%s: give the window in the pair or on its own, not both", s)
		}
		l, err := Parse(s)
		if err != nil {
			return nil, field.Errorf("limit", "%w", err)
		}
		out = append(out, l)
	}
	return out, nil
}

// ErrCountRange is in the chain of ParseCount's error for a whole number
// past the int64 range.
var ErrCountRange = errors.New("out of range")

// ParseCount reads a count: an integer in decimal ("100000"), or a whole
// number in exponent or decimal form ("1e5", "2.5e3", "100.0"), so that
// "1e18" gets the caller's bound in its error rather than a parse error.
// Errors: not a number, not whole, or past ±9223372036854775807 (wrapping
// ErrCountRange, and saying the range).
func ParseCount(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err == nil {
		return n, nil
	}
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%s is %w: at most %d", s, ErrCountRange, int64(math.MaxInt64))
	}
	f, ferr := strconv.ParseFloat(s, 64)
	switch {
	case ferr != nil && !errors.Is(ferr, strconv.ErrRange), math.IsNaN(f), strings.ContainsAny(s, "xXpP_"):
		return 0, fmt.Errorf("%q is not an integer", s)
	case math.IsInf(f, 0) || f >= math.MaxInt64 || f < math.MinInt64:
		return 0, fmt.Errorf("%s is %w: at most %d", s, ErrCountRange, int64(math.MaxInt64))
	case f != math.Trunc(f):
		return 0, fmt.Errorf("%s is not a whole number", s)
	}
	return int64(f), nil
}

// ParseDuration reads a duration as time.ParseDuration does, and also
// whole or fractional days with the unit "d" ("1d", "7d", "1d12h", "1.5d").
// A leading "-" negates the whole ("-1d12h"); whether a negative duration
// is allowed is Validate's to say.
func ParseDuration(s string) (time.Duration, error) {
	if rest, ok := strings.CutPrefix(s, "-"); ok && !strings.HasPrefix(rest, "-") {
		d, err := ParseDuration(rest)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		return -d, nil
	}
	rest := s
	var d time.Duration
	if i := strings.IndexByte(rest, 'd'); i >= 0 {
		days, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil || days < 0 || strings.ContainsAny(rest[:i], "+-eE") {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		d = time.Duration(days * float64(Day))
		rest = rest[i+1:]
		if rest == "" {
			return d, nil
		}
	}
	r, err := time.ParseDuration(rest)
	if err != nil && rest == s {
		return 0, err // no days: time's own error
	}
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	if r < 0 {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	return d + r, nil
}

// FormatRough writes d as a person reads a span: whole minutes from an
// hour on, whole seconds from a minute, tenths of a second from a second,
// whole milliseconds from a millisecond, else µs as they are ("39m",
// "4m12s", "1.5s", "120ms", "119µs"), in FormatWindow's notation.
func FormatRough(d time.Duration) string {
	switch {
	case d >= time.Hour:
		d = d.Round(time.Minute)
	case d >= time.Minute:
		d = d.Round(time.Second)
	case d >= time.Second:
		d = d.Round(100 * time.Millisecond)
	case d >= time.Millisecond:
		d = d.Round(time.Millisecond)
	}
	return FormatWindow(d)
}

// FormatWindow writes d in its shortest exact form, largest unit first
// and without zero units: "1h", "1m30s", "250ms", "1d", "7d12h",
// "1.5ms" (below 1 s the largest unit that fits, with decimals as
// time.Duration writes them). Zero is "0s"; negative durations get a
// leading "-".
func FormatWindow(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	if d < 0 {
		if d == -1<<63 {
			return d.String()
		}
		return "-" + FormatWindow(-d)
	}
	if d < time.Second {
		return d.String() // "250ms", "1.5ms", "800µs"
	}
	var b strings.Builder
	for _, u := range []struct {
		n    time.Duration
		name string
	}{{Day, "d"}, {time.Hour, "h"}, {time.Minute, "m"}} {
		if k := d / u.n; k > 0 {
			b.WriteString(strconv.FormatInt(int64(k), 10) + u.name)
			d -= k * u.n
		}
	}
	if d > 0 {
		b.WriteString(d.String()) // "30s", "1.5s", "500ms" (after "1m")
	}
	return b.String()
}

// jsonLimit is the JSON form: base units in the names.
type jsonLimit struct {
	Count       int64 `json:"count"`
	WindowMS    int64 `json:"window_ms"`
	PrecisionMS int64 `json:"precision_ms,omitempty"`
}

// MarshalJSON writes {"count":20,"window_ms":3600000}, with
// "precision_ms" when Precision is set. Windows are whole milliseconds.
func (l Limit) MarshalJSON() ([]byte, error) {
	return json.Marshal(jsonLimit{l.Count, l.Window.Milliseconds(), l.Precision.Milliseconds()})
}

// UnmarshalJSON reads the form MarshalJSON writes; it does not validate.
func (l *Limit) UnmarshalJSON(b []byte) error {
	var j jsonLimit
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.WindowMS < 0 || j.PrecisionMS < 0 {
		return errors.New("limit: window_ms and precision_ms must not be negative")
	}
	*l = Limit{Count: j.Count, Window: time.Duration(j.WindowMS) * time.Millisecond,
		Precision: time.Duration(j.PrecisionMS) * time.Millisecond}
	return nil
}
