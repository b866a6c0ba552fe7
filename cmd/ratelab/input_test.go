package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// every input flag given /dev/zero (endless) or a FIFO
// nobody writes to exits 2 within 1 s naming the flag and what the path
// is; before, /dev/zero was read until the OOM killer came and a FIFO
// blocked the open past Ctrl-C. The bound of 1 s is the contract.
func TestInputFlagsRefuseEndlessFiles(t *testing.T) {
	bin := buildBinary(t)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	flags := [][]string{
		{"verify", "--limit", "10", "--window", "1s", "--config"},
		{"verify", "--limit", "10", "--window", "1s", "--script"},
		{"run", "--scenario-file"},
		{"run", "--script"},
		{"run", "--config"},
		{"run", "--limit", "10", "--window", "1s", "--traffic"},
		{"capacity", "--script"},
		{"bench", "--config"},
		{"verify", "--algorithm", "sliding-log", "--limit", "10", "--window", "1s", "--redis", "rediss://127.0.0.1:1", "--redis-ca"},
	}
	for _, args := range flags {
		for _, path := range []string{"/dev/zero", fifo} {
			args := append(append([]string{}, args...), path)
			flag := args[len(args)-2]
			t.Run(strings.Join(args[:1], "")+flag+" "+filepath.Base(path), func(t *testing.T) {
				cmd := exec.Command(bin, args...)
				var stderr strings.Builder
				cmd.Stderr = &stderr
				start := time.Now()
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				timer := time.AfterFunc(20*time.Second, func() { _ = cmd.Process.Kill() }) // a hang: the failure this test is for
				defer timer.Stop()
				_ = cmd.Wait() // the exit code is checked below
				took := time.Since(start)
				if code := cmd.ProcessState.ExitCode(); code != exitUsage {
					t.Errorf("exit %d, want 2; stderr: %s", code, stderr.String())
				}
				if took > time.Second {
					t.Errorf("took %v, want at most 1s", took)
				}
				want := flag + ": " + path + ": "
				if !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "not a regular file") {
					t.Errorf("stderr %q: want it to name %q and say it is not a regular file", stderr.String(), want)
				}
			})
		}
	}
}

// an input past its size bound is refused naming the
// bound, and binary traffic is said to be binary, not "empty".
func TestInputBoundsAndBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big.lua")
	if err := os.WriteFile(big, []byte(strings.Repeat("-- comment\n", 500_000)), 0o600); err != nil {
		t.Fatal(err)
	}
	nul := filepath.Join(dir, "nul.csv")
	if err := os.WriteFile(nul, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verify", "--script", big, "--limit", "10", "--window", "1s"}, "--script: " + big + ": larger than the bound: 5500000 bytes, at most 4 MiB"},
		{[]string{"run", "--traffic", nul, "--limit", "10", "--window", "1s", "--redis", "exec", "--out", filepath.Join(dir, "out")}, "--traffic: " + nul + ": traffic file: binary data, not text (a NUL at byte 0)"},
	} {
		code, _, stderr := ratelab(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args[:2], code, stderr, tc.want)
		}
	}
}

// a script's reply carrying terminal escapes is shown
// escaped, never raw, on stderr and stdout.
func TestScriptRepliesNotEchoedRaw(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := ratelab(t, "verify", "--redis", "exec", "--script", "testdata/hostile/escapes.lua",
		"--key", "{key}", "--limit", "10", "--window", "1s", "--trust-script")
	if code != exitUsage {
		t.Errorf("exit %d, want 2; stderr: %s", code, stderr)
	}
	if strings.ContainsAny(stdout+stderr, "\x1b\x07") {
		t.Errorf("a control character reached the terminal: stdout %q, stderr %q", stdout, stderr)
	}
	if !strings.Contains(stderr, `denied \u001b[2J`) {
		t.Errorf("stderr does not show the reply escaped: %q", stderr)
	}
}

// verify says what the guard did, as run does, not
// Redis's raw NOPERM alone.
func TestVerifyExplainsGuard(t *testing.T) {
	t.Parallel()
	v := startVictim(t)
	code, _, stderr := ratelab(t, "verify", "--redis", "redis://"+v.addr, "--script", "testdata/hostile/outside.lua",
		"--limit", "10", "--window", "1s")
	if code != exitUsage || !strings.Contains(stderr, "the script tried to touch data outside ratelab's keys") || !strings.Contains(stderr, "pass --trust-script") {
		t.Errorf("exit %d, stderr %q; want 2 explaining the guard and --trust-script", code, stderr)
	}
}

// --connect-timeout bounds the whole connect (it took
// twice its bound: a probe, then a wait, each given all of it), and says
// so; rediss:// to a plain Redis says that, not "context deadline
// exceeded".
func TestConnectMessages(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range held {
					_ = c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	start := time.Now()
	code, _, stderr := ratelab(t, "verify", "--algorithm", "sliding-log", "--limit", "10", "--window", "1s",
		"--redis", "redis://"+ln.Addr().String(), "--connect-timeout", "2s")
	took := time.Since(start)
	if code != exitUsage || !strings.Contains(stderr, "no answer within 2s (the connect timeout)") {
		t.Errorf("silent server: exit %d, stderr %q", code, stderr)
	}
	if took > 3500*time.Millisecond { // the bound is the contract; before, 4 s
		t.Errorf("--connect-timeout 2s took %v", took)
	}

	v := startVictim(t)
	code, _, stderr = ratelab(t, "verify", "--algorithm", "sliding-log", "--limit", "10", "--window", "1s",
		"--redis", "rediss://"+v.addr, "--connect-timeout", "1s")
	if code != exitUsage || !strings.Contains(stderr, "the server answers plain Redis on this port, not TLS (use redis://)") {
		t.Errorf("rediss:// to a plain Redis: exit %d, stderr %q", code, stderr)
	}
}
