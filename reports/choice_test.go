package reports

import (
	"bytes"
	"testing"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports/reportstest"
)

// A Choice takes only its allowed formats (every one when none; wide
// wherever table is) and renders as Render does, Table widened by Wide.
func TestChoice(t *testing.T) {
	res := reportstest.Run()
	render := func(f Format, results any) string {
		var b bytes.Buffer
		if err := Render(&b, f, results); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name    string
		c       Choice
		results any
		refused bool   // Check names "format"
		want    Format // what Renderer renders as
	}{
		// every format when none is listed
		{"csv of all", Choice{Format: CSV}, res, false, CSV},
		// a format the command does not take
		{"csv of verify's", Choice{Format: CSV, Allowed: VerifyFormats}, res, true, ""},
		// table, widened by --wide
		{"wide table", Choice{Format: Table, Wide: true}, res, false, Wide},
		// --wide leaves other formats alone
		{"wide json", Choice{Format: JSON, Wide: true, Allowed: VerifyFormats}, &measure.VerifyReport{}, false, JSON},
		// the empty format is none
		{"empty", Choice{}, res, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Check()
			if name, _ := field.Name(err); (name == "format") != tc.refused {
				t.Fatalf("Check: got %v, want refused %v", err, tc.refused)
			}
			if tc.refused {
				return
			}
			var got bytes.Buffer
			if err := tc.c.Renderer(tc.results)(&got); err != nil {
				t.Fatal(err)
			}
			if want := render(tc.want, tc.results); got.String() != want {
				t.Errorf("Renderer wrote %d bytes unlike Render's %s (%d bytes)", got.Len(), tc.want, len(want))
			}
		})
	}
}
