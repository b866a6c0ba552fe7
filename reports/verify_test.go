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
