package algorithms_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/limit"
)

// A call carries its script's expiry form: a script the package did not
// make has none, and ExpiryCall names it rather than guessing a source.
func TestExpiryCallNeedsTheCallsForm(t *testing.T) {
	foreign := algorithms.ScriptCall{Script: redis.NewScript("return 1"), Keys: []string{"k"}}
	if _, err := algorithms.ExpiryCall(foreign, "k", "c", time.Unix(1, 0), time.Second); err == nil || !strings.Contains(err.Error(), "is not one of ratelab's") {
		t.Fatalf("ExpiryCall of a foreign script: %v, want the not-ratelab's error", err)
	}
	lim := newLimiter(t, "fixed-window", limit.Limit{Count: 5, Window: time.Second}).(algorithms.Scripted)
	c, err := lim.Call("{k}", 1, algorithms.At(time.Unix(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if c.Expiry == nil {
		t.Fatal("fixed-window's call carries no expiry form")
	}
	x, err := algorithms.ExpiryCall(c, "{k}", "~vt{k}", time.Unix(1, 0), time.Second)
	if err != nil || x.Script == c.Script || len(x.Keys) != len(c.Keys)+1 {
		t.Fatalf("ExpiryCall: %+v, %v", x, err)
	}
}
