package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ratelab/ratelab/internal/testenv"
)

// At 80x24 in tmux, `ratelab demo --explain` fits the terminal at every
// step: no line of any frame is wider than 80 columns (captured with
// wrapped lines joined, so a line that wrapped shows whole), the last
// screen before the explanation still shows the picture (every
// algorithm's timeline) rather than a table scrolled over it, and the
// explanation comes one algorithm a page, each turned with Enter.
func TestDemoFits80x24(t *testing.T) {
	tmux := testenv.Tool(t, "tmux", "tmux")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// a short command line, so that the shell's own echo of it fits too
	script := filepath.Join(dir, "d")
	if err := os.WriteFile(script, []byte(fmt.Sprintf("RATELAB_AS_MAIN=1 exec %s demo --redis exec --window 2s --lead 1s --explain --out %s/o\n",
		self, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := fmt.Sprintf("ratelab-fit-%d", os.Getpid())
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-L", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("new-session", "-d", "-s", "demo", "-x", "80", "-y", "24", "env -u TMUX PS1='$ ' bash --norc --noprofile")
	defer exec.Command(tmux, "-L", sock, "kill-server").Run()
	run("send-keys", "-t", "demo", "cd "+dir+" && clear && sh d; echo EXIT=$?", "Enter")

	algorithms := []string{"fixed-window", "sliding-log", "bucketed-hash", "reservoir", "gcra", "sliding-counter"}
	var screen string
	frames, pages := 0, 0
	lastPrompt := ""
	pictureBeforeExplain := false
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		screen = run("capture-pane", "-p", "-J", "-t", "demo")
		frames++
		for _, line := range strings.Split(screen, "\n") {
			if n := utf8.RuneCountInString(line); n > 80 {
				t.Fatalf("frame %d: a line of %d columns on an 80-column terminal:\n%s\nscreen:\n%s", frames, n, line, screen)
			}
		}
		if exited(screen) {
			break
		}
		if prompt := lastLine(screen); strings.HasPrefix(prompt, "[Enter: ") && prompt != lastPrompt {
			lastPrompt = prompt
			if pages == 0 {
				// before the first page: the whole picture is on the screen
				pictureBeforeExplain = strings.Contains(screen, "done: last answer at")
				for _, alg := range algorithms {
					if !strings.Contains(screen, alg+"  ") || !strings.Contains(screen, "┃") {
						pictureBeforeExplain = false
					}
				}
			}
			pages++
			run("send-keys", "-t", "demo", "Enter")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(screen, "\nEXIT=0") {
		t.Fatalf("the demo did not finish with exit 0 in 60 s:\n%s", screen)
	}
	if !pictureBeforeExplain {
		t.Error("the prompt for the explanation came without the whole picture on the screen")
	}
	if pages != len(algorithms) {
		t.Errorf("%d prompts to turn a page, want %d (one algorithm a page)", pages, len(algorithms))
	}
	history := run("capture-pane", "-p", "-J", "-S", "-", "-t", "demo")
	for _, line := range strings.Split(history, "\n") {
		if n := utf8.RuneCountInString(line); n > 80 {
			t.Errorf("a line of %d columns in the scrollback: %s", n, line)
		}
	}
	for _, want := range []string{"ratelab report " + dir + "/o", "sliding-counter accepted", "It weighs the previous window's count"} {
		if !strings.Contains(strings.Join(strings.Fields(history), " "), want) {
			t.Errorf("the scrollback lacks %q:\n%s", want, history)
		}
	}
}
