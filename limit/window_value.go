package limit

import (
	"strconv"
	"time"
)

// WindowValue is a time.Duration as a command-line flag value (flag.Value;
// Type makes it a pflag.Value too): read by ParseDuration, so "1d" and
// "7d" are windows, and written by FormatWindow ("1h", not "1h0m0s").
// Convert a *time.Duration to declare one: (*WindowValue)(&d).
type WindowValue time.Duration

// Set parses s (ParseDuration) into w.
func (w *WindowValue) Set(s string) error {
	d, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*w = WindowValue(d)
	return nil
}

// String is w written by FormatWindow.
func (w *WindowValue) String() string { return FormatWindow(time.Duration(*w)) }

// Type is "duration", the flag's type in a help text.
func (w *WindowValue) Type() string { return "duration" }

// CountValue is an int64 count as a command-line flag value (pflag.Value),
// read by ParseCount, so "1e6" is a million and "1e18" reaches the
// command's bound rather than a parse error. Convert an *int64 to declare
// one: (*CountValue)(&n).
type CountValue int64

// Set parses s (ParseCount) into c.
func (c *CountValue) Set(s string) error {
	n, err := ParseCount(s)
	if err != nil {
		return err
	}
	*c = CountValue(n)
	return nil
}

// String is c in decimal.
func (c *CountValue) String() string { return strconv.FormatInt(int64(*c), 10) }

// Type is "int", the flag's type in a help text.
func (c *CountValue) Type() string { return "int" }
