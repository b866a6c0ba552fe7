package main

import (
	"os"
	"testing"
)

// TestHelperCPUHog is not a test: started by TestVirtualRunUnderLoad as a
// child process (RATELAB_CPU_HOG=1), it spins until killed.
func TestHelperCPUHog(t *testing.T) {
	if os.Getenv("RATELAB_CPU_HOG") != "1" {
		t.Skip("a child process of TestVirtualRunUnderLoad")
	}
	for x := 0; ; x++ {
		_ = x * x
	}
}
