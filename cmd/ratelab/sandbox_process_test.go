//go:build process

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A client-side script on a user's Redis holding keys and a Function
// library, run by the ratelab binary: what it can reach is Redis 7.0's
// (dofile, print: exit 2 naming the missing global; no file's bytes in
// the output, nothing raw on stdout, --format json's one object); a
// backtracking pattern, a string of 8 GB, a doubling .. loop and a loop
// after the first calls stop with exit 2 and a message that names the
// cause once and the script once; SIGINT and SIGTERM stop a runaway
// script within a second. The user's keys and Functions stay as they were.
func TestClientSideSandbox(t *testing.T) {
	bin := buildBinary(t)
	v := startVictim(t)
	ctx := context.Background()
	c := v.client(t)
	fillForeign(t, c, 300)
	if err := c.Do(ctx, "FUNCTION", "LOAD", sandboxLib).Err(); err != nil {
		t.Fatal(err)
	}
	before := takeSnapshot(t, c)
	functions := c.Do(ctx, "FUNCTION", "DUMP").Val()
	url := "redis://" + v.addr
	dir := t.TempDir()
	const secret = "hunter2-not-for-output"
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("REDIS_PASSWORD="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// a fixed window after the attack, so that a script let through gets a verdict
	const body = "\nlocal n = redis.call('INCR', KEYS[1])\nredis.call('PEXPIRE', KEYS[1], 1000)\nif n <= 10 then return 1 end\nreturn 0\n"
	start := func(name, src string, extra ...string) *exec.Cmd {
		out := filepath.Join(dir, "out-"+name)
		for i := 2; ; i++ { // a new --out for every run
			if _, err := os.Stat(out); err != nil {
				break
			}
			out = filepath.Join(dir, "out-"+name+"-"+string(rune('0'+i)))
		}
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"verify", "--client-side", "--script", file, "--redis", url, "--limit", "10", "--window", "1s", "--out", out}, extra...)
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir // dofile('.env') reads here
		return cmd
	}
	run := func(cmd *exec.Cmd) (int, string, string, time.Duration) {
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		began := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		timer := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() }) // a hang, shown as exit -1
		_ = cmd.Wait()                                                             // the exit code is what is checked
		timer.Stop()
		return cmd.ProcessState.ExitCode(), o.String(), e.String(), time.Since(began)
	}
	for _, c := range []struct {
		name, src string
		extra     []string
		want      string // the message, after "--script PATH:"
		within    time.Duration
	}{
		{"dofile.lua", "dofile('.env')" + body, nil, "1: Script attempted to access nonexistent global variable 'dofile'", 5 * time.Second},
		{"loadstring.lua", "loadstring('return 1')()" + body, nil, "1: Script attempted to access nonexistent global variable 'loadstring'", 5 * time.Second},
		{"print.lua", "print('::error file=x::forged')\nprint('::add-mask::x')\nprint('{\"verdict\":\"holds\"}')" + body, []string{"--format", "json"},
			"1: Script attempted to access nonexistent global variable 'print'", 5 * time.Second},
		{"backtrack.lua", "redis.call('GET', KEYS[1])\nstring.find(string.rep('a', 30000), '.-.-.-.-.-b')" + body, []string{"--timeout", "1s", "--max-outage", "2s"},
			"2: stopped after ", 15 * time.Second},
		{"rep.lua", "local s = string.rep('x', 2^33)" + body, nil, "1: string.rep: the result would be 8589934592 bytes, more than the 536870912 a Redis string holds", 5 * time.Second},
		{"doubling.lua", "local s = 'xxx'\nwhile true do s = s .. s end" + body, []string{"--timeout", "30s"}, "2: ..: the result would be 805306368 bytes", 15 * time.Second},
		{"late-loop.lua", "local n = redis.call('INCR', KEYS[1] .. ':n')\nif n > 3 then while true do end end" + body, nil,
			"2: stopped after ", 15 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr, took := run(start(c.name, c.src, c.extra...))
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			last := lines[len(lines)-1]
			t.Logf("exit %d in %s: %s", code, took.Round(time.Millisecond), last)
			file := filepath.Join(dir, c.name)
			if code != exitUsage || !strings.HasPrefix(last, "ratelab: --script "+file+":"+c.want) {
				t.Fatalf("exit %d, last line %q; want exit %d and --script %s:%s...\n%s", code, last, exitUsage, file, c.want, stderr)
			}
			if n := strings.Count(last, c.name); n != 1 {
				t.Errorf("the script named %d times in %q; want once", n, last)
			}
			if strings.Contains(c.want, "stopped") && !strings.Contains(last, "ran past its call's time bound (--timeout sets the bound)") {
				t.Errorf("%q: want the cause (its bound)", last)
			}
			for _, bad := range []string{"kept failing", "did not answer", "fatal error", "goroutine ", secret} {
				if strings.Contains(stdout+stderr, bad) {
					t.Errorf("%q in the output:\n%s%s", bad, stdout, stderr)
				}
			}
			if strings.Contains(stdout, "::") || strings.Contains(stdout, `"holds"`) {
				t.Errorf("forged lines on stdout:\n%s", stdout)
			}
			if slicesContains(c.extra, "json") {
				var obj map[string]any
				if err := json.Unmarshal([]byte(stdout), &obj); err != nil {
					t.Errorf("--format json: stdout is not one JSON object (%v):\n%s", err, stdout)
				}
			}
			if took > c.within {
				t.Errorf("took %s; want under %s", took, c.within)
			}
		})
	}

	// a signal stops a runaway script within a second (5 s allowed on a
	// loaded machine; the time is logged)
	runaway := "redis.call('GET', KEYS[1])\nlocal s = string.rep('a', 30000)\nwhile true do string.find(s, '.-.-.-.-.-b') end" + body
	for _, sig := range []struct {
		sig  syscall.Signal
		exit int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(sig.sig.String(), func(t *testing.T) {
			cmd := start("runaway.lua", runaway, "--timeout", "60s", "--max-outage", "60s")
			var o, e bytes.Buffer
			cmd.Stdout, cmd.Stderr = &o, &e
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * time.Second) // past the guard's probe, into verify's trials
			sent := time.Now()
			if err := cmd.Process.Signal(sig.sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("%s: still running 5s after the signal:\n%s", sig.sig, e.String())
			}
			took := time.Since(sent)
			t.Logf("%s: exit %d %s after the signal", sig.sig, cmd.ProcessState.ExitCode(), took.Round(time.Millisecond))
			if cmd.ProcessState.ExitCode() != sig.exit || !strings.Contains(e.String(), "interrupted") {
				t.Errorf("%s: exit %d, want %d and 'interrupted':\n%s", sig.sig, cmd.ProcessState.ExitCode(), sig.exit, e.String())
			}
			if took > time.Second {
				t.Logf("%s: over the 1 s contract (%s): a loaded machine?", sig.sig, took)
			}
		})
	}

	compareSnapshots(t, "after the sandbox attacks", before, takeSnapshot(t, c))
	if d := c.Do(ctx, "FUNCTION", "DUMP").Val(); d != functions {
		t.Error("FUNCTION DUMP changed")
	}
	if got := c.Do(ctx, "FCALL", "sandboxfn", "0").Val(); got != "user" {
		t.Errorf("FCALL sandboxfn answered %v, want user", got)
	}
}
