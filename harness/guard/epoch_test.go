package guard_test

import (
	"testing"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/guard"
)

// The probe decides a script's calls at the instants a virtual run does,
// so a script that misbehaves only near them is caught.
func TestProbeEpochIsTheRunsEpoch(t *testing.T) {
	if !guard.ProbeEpoch.Equal(harness.VirtualEpoch) {
		t.Errorf("probe epoch %v, virtual runs' %v", guard.ProbeEpoch, harness.VirtualEpoch)
	}
}
