package version

import "testing"

// The link-time Version wins over the build info; without it the answer is
// never empty.
func TestString(t *testing.T) {
	if got := String(); got == "" {
		t.Fatalf("String() = %q, want a version or \"unknown\"", got)
	}
	old := Version
	defer func() { Version = old }()
	Version = "v9.9.9-test"
	if got := String(); got != "v9.9.9-test" {
		t.Fatalf("String() with Version set = %q, want v9.9.9-test", got)
	}
}
