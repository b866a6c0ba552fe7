package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
)

// victim is a redis-server the test may kill, stop and restart.
type victim struct {
	addr string
	port string
	cmd  *exec.Cmd
}

func startVictim(t *testing.T) *victim {
	t.Helper()
	port := strconv.Itoa(freePortT(t))
	v := &victim{addr: "127.0.0.1:" + port, port: port}
	v.start(t)
	t.Cleanup(func() {
		if v.cmd != nil && v.cmd.Process != nil {
			_ = v.cmd.Process.Signal(syscall.SIGCONT)
			_ = v.cmd.Process.Kill()
			_ = v.cmd.Wait()
		}
	})
	return v
}

// client is a client of v, closed when t ends.
func (v *victim) client(t *testing.T) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: v.addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (v *victim) start(t *testing.T) {
	t.Helper()
	v.cmd = exec.Command("redis-server", "--port", v.port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--logfile", "")
	v.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := v.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: v.addr, MaxRetries: -1})
	defer c.Close()
	for i := 0; i < 200; i++ {
		if c.Ping(context.Background()).Err() == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("redis-server on %s did not start", v.addr)
}

func (v *victim) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := v.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	if sig == syscall.SIGKILL {
		_ = v.cmd.Wait()
	}
}

func freePortT(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// runAsync runs ratelab in the background; the result arrives on the channel.
type runResult struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

func runAsync(args ...string) <-chan runResult {
	ch := make(chan runResult, 1)
	go func() {
		var out, errb strings.Builder
		start := time.Now()
		code := Main(args, &out, &errb)
		ch <- runResult{code, out.String(), errb.String(), time.Since(start)}
	}()
	return ch
}

// readDecisions checks a decision file (--decisions, any of its formats:
// reports.ReadDecisions): every line a record, no duplicate (algorithm, seq).
func readDecisions(t *testing.T, path string) (n int, errs int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	err = reports.ReadDecisions(f, func(d measure.Record) error {
		id := fmt.Sprintf("%s/%s/%d", d.Algorithm, d.Scenario, d.Seq)
		if seen[id] {
			return fmt.Errorf("decision %s recorded twice", id)
		}
		seen[id] = true
		n++
		if d.Error != "" {
			errs++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n, errs
}

// overloadArgs: 5 s of real-time overload (750 decisions per algorithm) against addr.
func overloadArgs(addr, out string, extra ...string) []string {
	return append([]string{"run", "--redis", "redis://" + addr, "--clock", "client", "--scenarios", "overload",
		"--algorithms", "sliding-log,fixed-window", "--window", "1s", "--out", out, "--format", "json",
		"--decisions", filepath.Join(out, "decisions.jsonl")}, extra...)
}
