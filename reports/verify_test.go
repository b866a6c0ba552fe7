package reports

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports/reportstest"
)

func TestWriteVerifyGolden(t *testing.T) {
	for _, c := range []struct {
		name     string
		format   Format
		violated bool
	}{{"verify-holds", Table, false}, {"verify-violated", Table, true}, {"verify-violated-wide", Wide, true}} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteVerify(&b, c.format, reportstest.Verify(c.violated)); err != nil {
				t.Fatal(err)
			}
			golden(t, c.name+".golden", b.Bytes())
		})
	}
	// a fixed window from the first hit: times from the first request,
	// every request of the minimal trace (the first hit with the 11 in
	// the window), the replay hint with the --out folder's path
	t.Run("verify-first-hit", func(t *testing.T) {
		var b bytes.Buffer
		if err := WriteVerify(&b, Table, reportstest.VerifyFirstHit()); err != nil {
			t.Fatal(err)
		}
		golden(t, "verify-first-hit.golden", b.Bytes())
		for _, want := range []string{"from the first request", "12 requests, every one needed", "     +0.000000 s  user  cost 1  client 0  accepted\n",
			"+60.001007 s  user  cost 1  client 0  accepted, in the window", "  replay it: ratelab verify --replay verify-report/verify.json\n  traffic file: verify-report/counter-example.csv\n"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("the first-hit counter-example lacks %q:\n%s", want, b.String())
			}
		}
	})
	var b bytes.Buffer
	if err := WriteVerify(&b, "json", reportstest.Verify(true)); err != nil {
		t.Fatal(err)
	}
	var back measure.VerifyReport
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.CounterExample == nil || len(back.CounterExample.Decisions) != 14 {
		t.Errorf("json round trip: %v %+v", err, back.CounterExample)
	}
	// a format verify does not take names the field, not a flag
	for _, f := range []Format{"xml", Markdown, CSV} {
		err := Render(&b, f, reportstest.Verify(false))
		if name, _ := field.Name(err); name != "format" || !strings.Contains(err.Error(), "want table or json") {
			t.Errorf("Render(%s): %v, want a format field error", f, err)
		}
	}
}
