package publish

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/testenv"
	"github.com/ratelab/ratelab/reports/reportstest"
)

// report.html of a replay, rendered by headless Chromium, shows the
// per-key table and the trailing-window plot.
func TestReplayHTMLInChromium(t *testing.T) {
	testenv.SkipUnderRace(t)
	bin := reportstest.Chromium(t)
	dir := t.TempDir()
	if err := WriteDir(dir, reportstest.Replay()); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"trailing-traffic.png", "trailing-traffic.svg", "ratio.png", "report.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	url := "file://" + filepath.Join(dir, "report.html")
	args := func(extra ...string) []string {
		return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
			"--user-data-dir=" + filepath.Join(dir, "profile"), "--window-size=1280,3200"}, append(extra, url)...)
	}
	dom, err := exec.CommandContext(ctx, bin, args("--dump-dom")...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	for _, want := range []string{"Per key", "worst max in W", "203.0.113.1", "10.0.0.1 (10), 10.0.0.2 (2)", "trailing-traffic",
		"1 of 3 keys over the limit", "malformed: line 7: bad time [x]", "peak RSS 50.0 MiB"} {
		if !bytes.Contains(dom, []byte(want)) {
			t.Errorf("the rendered DOM lacks %q", want)
		}
	}
	if n := bytes.Count(dom, []byte("<svg")); n != 2 {
		t.Errorf("the rendered DOM has %d SVGs, want 2 (trailing, ratio)", n)
	}
	shot := filepath.Join(dir, "report.png")
	if out, err := exec.CommandContext(ctx, bin, args("--screenshot="+shot)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	if *screenshot != "" {
		data, _ := os.ReadFile(shot)
		_ = os.WriteFile(strings.Replace(*screenshot, ".png", "-replay.png", 1), data, 0o644)
	}
}
