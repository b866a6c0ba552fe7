package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/testenv"
	"github.com/ratelab/ratelab/measure"
)

// At 80x24 in tmux, paced: the frame is redrawn in place (its header is in
// the scrollback once, not once per redraw), no frame line wraps, and the
// paced bursts last pace times longer than live ones (measured from the
// decisions the demo recorded).
func TestDemoInTmux80Paced(t *testing.T) {
	tmux := testenv.Tool(t, "tmux", "tmux")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sock := fmt.Sprintf("ratelab-test80-%d", os.Getpid())
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-L", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("new-session", "-d", "-s", "demo", "-x", "80", "-y", "24", "env -u TMUX bash --norc --noprofile")
	defer exec.Command(tmux, "-L", sock, "kill-server").Run()
	out := t.TempDir()
	// 2 s window: the burst before the boundary starts at -200ms, 50
	// requests 1 ms apart; 4x stretches it to about 200 ms
	run("send-keys", "-t", "demo", fmt.Sprintf("clear; RATELAB_AS_MAIN=1 %s demo --redis exec --window 2s --lead 1s --pace 4x --out %s --decisions %s/decisions.jsonl; echo EXIT=$?", self, out, out), "Enter")
	var screen string
	frames := 0
	deadline := time.Now().Add(40 * time.Second)
	for time.Now().Before(deadline) {
		screen = run("capture-pane", "-p", "-t", "demo")
		if n := strings.Count(screen, "ratelab demo ·"); n > 1 {
			t.Fatalf("%d frame headers on one screen: the frame scrolls instead of being redrawn:\n%s", n, screen)
		} else if n == 1 {
			frames++
		}
		if exited(screen) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(screen, "\nEXIT=0") {
		t.Fatalf("the demo did not finish with exit 0 in 40 s:\n%s", screen)
	}
	if frames == 0 {
		t.Error("no frame seen")
	}
	history := run("capture-pane", "-p", "-J", "-S", "-", "-t", "demo")
	if n := strings.Count(history, "ratelab demo ·"); n != 1 {
		t.Errorf("%d frame headers in the scrollback, want 1 (redrawn in place):\n%s", n, history)
	}
	for _, want := range []string{"done: last answer at", "bursts: 50 at -200ms over 196ms", "paced 4x"} {
		if !strings.Contains(history, want) {
			t.Errorf("the scrollback lacks %q:\n%s", want, history)
		}
	}

	// the bursts, as decided on the Redis clock. A request is never sent
	// before its time, and a late one may hold up those after it, so a
	// burst's span on a loaded machine says little; its last request does:
	// it is due at its paced offset from the boundary (a multiple of the
	// 2 s window on the Redis clock), about -4 ms at 4x, and cannot be
	// decided before it (live, it would be at about -151 ms).
	data, err := os.ReadFile(filepath.Join(out, "decisions.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	const window = int64(2_000_000) // µs
	var first, last [2]int64
	var lastAt int64 // burst 0's last request's scheduled offset from the boundary, µs
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r measure.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		b := 0
		if r.AtUS >= 0 {
			b = 1
		}
		if first[b] == 0 || r.DecidedAtUS < first[b] {
			first[b] = r.DecidedAtUS
		}
		last[b] = max(last[b], r.DecidedAtUS)
		if b == 0 && (lastAt == 0 || r.AtUS > lastAt) {
			lastAt = r.AtUS
		}
	}
	for b := range 2 {
		t.Logf("burst %d decided over %v (live: about 49ms)", b, time.Duration(last[b]-first[b])*time.Microsecond)
	}
	boundary := (first[0] + window/2) / window * window // burst 0 starts 200 ms before it
	if at := time.Duration(lastAt) * time.Microsecond; at < -10*time.Millisecond {
		t.Errorf("burst 0's last request is scheduled at %v from the boundary, want about -4ms (paced 4x)", at)
	}
	if early := time.Duration(boundary+lastAt-last[0]) * time.Microsecond; early > 2*time.Millisecond {
		t.Errorf("burst 0's last request was decided %v before its paced time: the burst is not paced", early)
	}
}
