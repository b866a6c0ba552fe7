package main

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// --window reads what limit.ParseDuration reads (days too) and shows its
// default the short way.
func TestWindowFlag(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		arg  string
		want time.Duration
		bad  bool
	}{
		{arg: "1d", want: 24 * time.Hour},
		{arg: "7d", want: 7 * 24 * time.Hour},
		{arg: "1h30m", want: 90 * time.Minute},
		{arg: "-1s", want: -time.Second}, // parsed; the config's Validate refuses it
		{arg: "1w", bad: true},
	} {
		fl := pflag.NewFlagSet("t", pflag.ContinueOnError)
		var w time.Duration
		windowVar(fl, &w, "window", time.Hour, "")
		if got := fl.Lookup("window").DefValue; got != "1h" {
			t.Errorf("default shown as %q, want 1h", got)
		}
		err := fl.Parse([]string{"--window", c.arg})
		if (err != nil) != c.bad || (!c.bad && w != c.want) {
			t.Errorf("--window %s: got %v, %v; want %v (error %v)", c.arg, w, err, c.want, c.bad)
		}
	}
}
