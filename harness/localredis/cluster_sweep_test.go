package localredis

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// A `--redis cluster` whose ratelab was killed (kill -9 skips Close) leaves
// its temporary directory: SweepClusterDirs (run by ratelab clean) removes
// it, and leaves the directory of a live ratelab and names it did not make.
func TestSweepClusterDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Process.Kill(); _ = live.Wait() })
	dir := func(name string) string {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(p, "node-1"), 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	killed := dir(fmt.Sprintf("%s%d-1", clusterDirPrefix, dead.Process.Pid))
	running := dir(fmt.Sprintf("%s%d-1", clusterDirPrefix, live.Process.Pid))
	own := dir(fmt.Sprintf("%s%d-1", clusterDirPrefix, os.Getpid()))
	foreign := dir("ratelab-cluster-notapid-1")
	other := dir("someone-else")
	if got := SweepClusterDirs(); !slices.Equal(got, []string{killed}) {
		t.Errorf("removed %v, want only the killed ratelab's %s", got, killed)
	}
	for _, p := range []string{running, own, foreign, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v, want it kept", p, err)
		}
	}
	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Errorf("%s still there (%v)", killed, err)
	}
}
