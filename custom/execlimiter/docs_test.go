package execlimiter_test

import (
	"os"
	"strings"
	"testing"
)

// docs/exec.md shows each adapter in full, as the file the tests run.
func TestDocsShowTheAdapters(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/exec.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"limits_adapter.py", "sliding_log_adapter.py", "rack_attack_adapter.rb"} {
		src, err := os.ReadFile("../../docs/adapters/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), "\n"+string(src)+"```") {
			t.Errorf("docs/exec.md does not show docs/adapters/%s as it is", name)
		}
	}
}
