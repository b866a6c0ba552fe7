package targets

import (
	"strings"
	"testing"
)

// FuzzTargetFile: parsing a target file never panics; an error names the file.
func FuzzTargetFile(f *testing.F) {
	for _, s := range []string{"algorithm: sliding-log\nlimits:\n  - {limit: 10, window: 1s}\n", "http: http://x\n", "script: x.lua\n",
		"algorithm: gcra\nkeys: [1]\n", "limits: [{limit: a}]\n", "- 1\n", "allowed_when: x\n", "algorithm: [a]\n", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := ParseFile([]byte(s), "t.yaml"); err != nil && !strings.Contains(err.Error(), "t.yaml") {
			t.Errorf("error %q does not name the file", err)
		}
	})
}
