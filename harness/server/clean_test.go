package server_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/internal/redistest"
)

// openExec starts a throwaway redis-server for one test.
func openExec(t *testing.T) *server.Redis {
	t.Helper()
	srv := redistest.Start()
	t.Cleanup(func() { _ = srv.Close() })
	return srv.Redis
}

func TestIsRunID(t *testing.T) {
	for s, want := range map[string]bool{
		server.NewRunID():      true,
		"20261122T030515-cfab": true,
		"20261122T030515-zzzz": false, // not hex
		"20261122T030515-CFAB": false, // server.NewRunID writes lower case
		"20261399T030515-cfab": false, // no such date
		"20261122T250515-cfab": false,
		"20261122T030515-cfa":  false,
		"20261122T030515cfab0": false,
		"users":                false,
		"session":              false,
		"access-check":         false,
		"":                     false,
	} {
		if got := server.IsRunID(s); got != want {
			t.Errorf("server.IsRunID(%q) = %v, want %v", s, got, want)
		}
	}
}

// A registered run refreshes its marker beyond server.AliveTTL, notices when it
// vanishes, and stops refreshing at Stop.
func TestRegisterHeartbeat(t *testing.T) {
	r := openExec(t)
	ctx := context.Background()
	id := server.NewRunID()
	reg, err := server.Register(ctx, r.Client, id)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	if ttl := r.Client.PTTL(ctx, server.RecordKey(id)).Val(); ttl < server.RecordTTL-time.Minute {
		t.Errorf("record TTL %v, want %v", ttl, server.RecordTTL)
	}
	time.Sleep(server.AliveTTL + server.AliveEvery)
	if ttl := r.Client.PTTL(ctx, server.MarkerKey(id)).Val(); ttl < server.AliveTTL-2*server.AliveEvery {
		t.Fatalf("marker TTL %v after %v: not refreshed", ttl, server.AliveTTL+server.AliveEvery)
	}
	if reg.Vanished() {
		t.Fatal("Vanished before anything was removed")
	}
	r.Client.Del(ctx, server.MarkerKey(id))
	time.Sleep(2 * server.AliveEvery)
	if !reg.Vanished() {
		t.Error("the marker was removed, Vanished is false")
	}
	if r.Client.Exists(ctx, server.MarkerKey(id)).Val() != 1 {
		t.Error("the marker was not written again")
	}
	reg.Stop()
	reg.Stop()
	before := r.Client.PTTL(ctx, server.MarkerKey(id)).Val()
	time.Sleep(2 * server.AliveEvery)
	if after := r.Client.PTTL(ctx, server.MarkerKey(id)).Val(); after > before-server.AliveEvery {
		t.Errorf("marker TTL %v, was %v: still refreshed after Stop", after, before)
	}
}

// A run whose marker is there but whose process on this machine is gone
// (kill -9) is not live: clean need not wait out server.AliveTTL. A process that
// runs is live.
func TestKilledRunNotLive(t *testing.T) {
	r := openExec(t)
	ctx := context.Background()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	rec := server.RunRecord{RunID: server.NewRunID(), Started: time.Now().UTC(), PID: pid, Process: server.ProcIdentity(pid)}
	if rec.Process == "" {
		t.Fatal("no identity for a running process")
	}
	b, _ := json.Marshal(rec)
	r.Client.Set(ctx, server.MarkerKey(rec.RunID), b, server.AliveTTL)
	r.Client.Set(ctx, server.RecordKey(rec.RunID), b, server.RecordTTL)
	r.Client.Set(ctx, server.RunPrefix(rec.RunID)+"k", "v", time.Minute)
	find := func() server.Leftover {
		t.Helper()
		ls, err := server.FindLeftovers(ctx, r.Client, server.CleanConfig{Run: rec.RunID})
		if err != nil || len(ls) != 1 {
			t.Fatalf("server.FindLeftovers: %v, %+v", err, ls)
		}
		return ls[0]
	}
	if l := find(); !l.Live || l.Remove {
		t.Errorf("running process: %+v, want live", l)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	l := find()
	if l.Live || !l.Remove || len(l.Keys) != 3 {
		t.Fatalf("killed process: %+v, want not live, to remove", l)
	}
	n, err := server.RemoveLeftovers(ctx, r.Client, []server.Leftover{l})
	if err != nil || n != 3 {
		t.Errorf("server.RemoveLeftovers: %d, %v", n, err)
	}
	if left, _ := server.ScanKeys(ctx, r.Client, server.RunPrefix(rec.RunID)); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}

// a run suspended (Ctrl-Z) longer than server.AliveTTL
// has lost its marker, but its process on this machine still runs: clean
// leaves its keys (before, it removed them and the run said VIOLATED once
// resumed). Once the process is gone, they are removed.
func TestSuspendedRunLive(t *testing.T) {
	r := openExec(t)
	ctx := context.Background()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	// the signal is delivered asynchronously: wait until the process is stopped
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); strings.Contains(string(b), ") T ") {
			break
		}
	}
	rec := server.RunRecord{RunID: server.NewRunID(), Started: time.Now().UTC(), PID: pid, Process: server.ProcIdentity(pid)}
	b, _ := json.Marshal(rec)
	// the record only: the marker expired while the process was stopped
	r.Client.Set(ctx, server.RecordKey(rec.RunID), b, server.RecordTTL)
	r.Client.Set(ctx, server.RunPrefix(rec.RunID)+"k", "v", time.Minute)
	ls, err := server.FindLeftovers(ctx, r.Client, server.CleanConfig{})
	if err != nil || len(ls) != 1 || !ls[0].Live || ls[0].Remove {
		t.Fatalf("a stopped run's keys: %v, %+v; want live, kept", err, ls)
	}
	if n, err := server.RemoveLeftovers(ctx, r.Client, ls); n != 0 || err != nil {
		t.Errorf("removed %d keys of a stopped run (%v)", n, err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	ls, err = server.FindLeftovers(ctx, r.Client, server.CleanConfig{})
	if err != nil || len(ls) != 1 || ls[0].Live || !ls[0].Remove {
		t.Fatalf("a dead run's keys: %v, %+v; want to remove", err, ls)
	}
}
