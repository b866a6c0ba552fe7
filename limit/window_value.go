package limit

import "time"

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
