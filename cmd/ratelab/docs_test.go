package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
)

// docsFiles are the Markdown files whose quoted outputs TestDocs checks.
func docsFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, files...)
}

// docsBlock is one quoted output: a fenced block after a line
// "<!-- docs-check -->", whose first line is "$ ratelab ARGS" and whose
// other lines are what ratelab ARGS prints on stdout.
type docsBlock struct {
	file        string
	line        int // of the "$ ratelab" line, 1-based
	args        []string
	quoted      string
	first, last int // the block's output lines, [first, last) in the file's lines
}

func findDocsBlocks(t *testing.T, file string, lines []string) []docsBlock {
	t.Helper()
	var out []docsBlock
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "<!-- docs-check -->" {
			continue
		}
		if i+2 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") || !strings.HasPrefix(lines[i+2], "$ ratelab ") {
			t.Errorf("%s:%d: a docs-check marker must be followed by a fenced block starting with \"$ ratelab ...\"", file, i+1)
			continue
		}
		args, err := shellWords(strings.TrimPrefix(lines[i+2], "$ ratelab "))
		if err != nil {
			t.Errorf("%s:%d: %v", file, i+3, err)
			continue
		}
		b := docsBlock{file: file, line: i + 3, args: args, first: i + 3}
		j := i + 3
		for j < len(lines) && !strings.HasPrefix(lines[j], "```") {
			j++
		}
		if j == len(lines) {
			t.Errorf("%s:%d: unclosed block", file, i+2)
			break
		}
		b.last = j
		b.quoted = strings.Join(lines[b.first:b.last], "\n")
		out = append(out, b)
		i = j
	}
	return out
}

// The noise a quoted output may differ in from a fresh one: latencies (µs
// columns), wall times and the throwaway Redis's port.
var (
	docsWallTime = regexp.MustCompile(`(\d+ decisions, \d+ errors, )[0-9.]+s`)
	docsPort     = regexp.MustCompile(`127\.0\.0\.1:\d+`)
)

func docsNormal(t *testing.T, s string) string {
	s = strings.TrimRight(s, "\n")
	if strings.Contains(s, " µs |") {
		s = maskPipeTable(t, s)
	}
	s = docsWallTime.ReplaceAllString(s, "${1}*s")
	return docsPort.ReplaceAllString(s, "127.0.0.1:*")
}

// Every quoted output in README.md and docs/*.md (a fenced block after
// "<!-- docs-check -->") is what ratelab prints now, within noise (the
// latency columns, wall times, ports). -update rewrites the blocks from
// fresh output (make docs-check runs this test).
func TestDocs(t *testing.T) {
	t.Chdir(filepath.Join("..", "..")) // the commands' paths are the repository's, as a reader types them
	srv := redistest.Start()
	t.Cleanup(func() { srv.Close() })
	total := 0
	for _, file := range docsFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		blocks := findDocsBlocks(t, file, lines)
		total += len(blocks)
		changed := false
		for k := len(blocks) - 1; k >= 0; k-- { // from the end: rewriting keeps earlier line numbers
			b := blocks[k]
			// the command's own --out (or results/<run id>) goes to a temporary directory,
			// named as the docs name it in what the command prints
			args := slices.Clone(b.args)
			var outAs [2]string // the temporary --out, and as the docs name it
			if i := slices.Index(args, "--out"); i >= 0 && i+1 < len(args) {
				outAs = [2]string{filepath.Join(t.TempDir(), filepath.Base(args[i+1])), args[i+1]}
				args[i+1] = outAs[0]
			} else if len(args) == 0 || args[0] != "verify" { // verify writes nothing without --out, and says so
				args = append(args, "--out", t.TempDir())
			}
			args = append(args, "--redis", "redis://"+srv.Info.Addr)
			code, stdout, stderr := ratelab(t, args...)
			if code != exitOK && code != exitFail {
				t.Errorf("%s:%d: ratelab %s: exit %d\n%s", b.file, b.line, strings.Join(b.args, " "), code, stderr)
				continue
			}
			fresh := strings.TrimRight(stdout, "\n")
			if outAs[0] != "" { // the paths it prints, as the reader's command makes them
				fresh = strings.ReplaceAll(fresh, outAs[0], outAs[1])
			}
			if docsNormal(t, fresh) == docsNormal(t, b.quoted) {
				continue
			}
			if *update {
				lines = append(lines[:b.first], append(strings.Split(fresh, "\n"), lines[b.last:]...)...)
				changed = true
				continue
			}
			t.Errorf("%s:%d: the quoted output of `ratelab %s` drifted (rewrite with go test ./cmd/ratelab -run TestDocs -update, or make docs-check UPDATE=1):\n%s",
				b.file, b.line, strings.Join(b.args, " "), lineDiff(docsNormal(t, b.quoted), docsNormal(t, fresh)))
		}
		if changed {
			if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if total < 2 {
		t.Errorf("%d docs-checked blocks, want at least 2 (README's quickstart)", total)
	}
}

// lineDiff shows the lines that differ, "-" quoted, "+" fresh.
func lineDiff(quoted, fresh string) string {
	q, f := strings.Split(quoted, "\n"), strings.Split(fresh, "\n")
	var b strings.Builder
	for i := 0; i < max(len(q), len(f)); i++ {
		var a, c string
		if i < len(q) {
			a = q[i]
		}
		if i < len(f) {
			c = f[i]
		}
		if a != c {
			fmt.Fprintf(&b, "line %d:\n- %s\n+ %s\n", i+1, a, c)
		}
	}
	return b.String()
}

// shellWords splits a command line as a shell would for the docs' simple
// commands: words apart at spaces, '...' quoting a word (no escapes).
func shellWords(s string) ([]string, error) {
	var out []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			w.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unclosed quote in %q", s)
	}
	if inWord {
		out = append(out, w.String())
	}
	return out, nil
}

func TestShellWords(t *testing.T) {
	t.Parallel()
	got, err := shellWords(`verify --arg '{now_ms}' --allowed 'reply in [1, 2]'  --limit 10`)
	want := []string{"verify", "--arg", "{now_ms}", "--allowed", "reply in [1, 2]", "--limit", "10"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	if _, err := shellWords("--arg 'open"); err == nil {
		t.Error("an unclosed quote: no error")
	}
}
