package reports

import (
	"io"
	"testing"

	"github.com/ratelab/ratelab/measure"
)

// A results.json from anywhere parses or fails cleanly, and whatever parses
// renders in every format without a panic.
func FuzzParseResults(f *testing.F) {
	f.Add([]byte(`{"tool":"ratelab","results":[]}`))
	f.Add([]byte(`{"results":[{"algorithm":"a","scenario":"s","limit":0,"window_ms":-1,"ratio":1e308,"timeline":[{"t_ms":1,"accepted":-5}]}]}`))
	f.Add([]byte(`{"results":null}`))
	f.Add([]byte(`{"results":[1,2]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{not json`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := measure.ParseResults(data, "fuzz.json")
		if err != nil {
			return
		}
		for _, format := range Formats {
			_ = Write(io.Discard, format, r)
		}
		_ = WriteReport(io.Discard, r, []string{"ratio.png"})
	})
}
