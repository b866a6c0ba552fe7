package reports

import (
	"bytes"
	"testing"

	"github.com/ratelab/ratelab/reports/reportstest"
)

func TestPerKeyGolden(t *testing.T) {
	for _, format := range []Format{Table, Wide, Markdown} {
		var b bytes.Buffer
		if err := Write(&b, format, reportstest.Replay()); err != nil {
			t.Fatal(err)
		}
		golden(t, "perkey-"+string(format)+".golden", b.Bytes())
	}
	var b bytes.Buffer
	if err := WriteReport(&b, reportstest.Replay(), []string{"trailing-traffic.png"}); err != nil {
		t.Fatal(err)
	}
	golden(t, "perkey-report.md.golden", b.Bytes())
}
