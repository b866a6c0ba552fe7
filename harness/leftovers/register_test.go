package leftovers_test

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

	"github.com/ratelab/ratelab/harness/leftovers"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
)

// short is a heartbeat fast enough that a test waits out a few of its
// beats in well under a second.
var short = leftovers.Heartbeat{TTL: 500 * time.Millisecond, Every: 50 * time.Millisecond}

// A registered run refreshes its marker beyond short.TTL, notices when it
// vanishes, and stops refreshing at Stop.
func TestRegisterHeartbeat(t *testing.T) {
	r := redistest.Open(t)
	ctx := context.Background()
	id := server.NewRunID()
	reg, err := leftovers.Register(ctx, r.Client, id, short)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	if ttl := r.Client.PTTL(ctx, leftovers.RecordKey(id)).Val(); ttl < leftovers.RecordTTL-time.Minute {
		t.Errorf("record TTL %v, want %v", ttl, leftovers.RecordTTL)
	}
	time.Sleep(short.TTL + short.Every)
	if ttl := r.Client.PTTL(ctx, leftovers.MarkerKey(id)).Val(); ttl < short.TTL-2*short.Every {
		t.Fatalf("marker TTL %v after %v: not refreshed", ttl, short.TTL+short.Every)
	}
	if reg.Vanished() {
		t.Fatal("Vanished before anything was removed")
	}
	r.Client.Del(ctx, leftovers.MarkerKey(id))
	time.Sleep(2 * short.Every)
	if !reg.Vanished() {
		t.Error("the marker was removed, Vanished is false")
	}
	if r.Client.Exists(ctx, leftovers.MarkerKey(id)).Val() != 1 {
		t.Error("the marker was not written again")
	}
	reg.Stop()
	reg.Stop()
	before := r.Client.PTTL(ctx, leftovers.MarkerKey(id)).Val()
	time.Sleep(2 * short.Every)
	if after := r.Client.PTTL(ctx, leftovers.MarkerKey(id)).Val(); after > before-short.Every {
		t.Errorf("marker TTL %v, was %v: still refreshed after Stop", after, before)
	}
}

// A run whose marker is there but whose process on this machine is gone
// (kill -9) is not live: clean need not wait out the marker's TTL. A process that
// runs is live.
func TestKilledRunNotLive(t *testing.T) {
	r := redistest.Open(t)
	ctx := context.Background()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	rec := leftovers.RunRecord{RunID: server.NewRunID(), Started: time.Now().UTC(), PID: pid, Process: leftovers.ProcIdentity(pid)}
	if rec.Process == "" {
		t.Fatal("no identity for a running process")
	}
	b, _ := json.Marshal(rec)
	r.Client.Set(ctx, leftovers.MarkerKey(rec.RunID), b, leftovers.DefaultTTL)
	r.Client.Set(ctx, leftovers.RecordKey(rec.RunID), b, leftovers.RecordTTL)
	r.Client.Set(ctx, server.RunPrefix(rec.RunID)+"k", "v", time.Minute)
	find := func() leftovers.Leftover {
		t.Helper()
		ls, err := leftovers.FindLeftovers(ctx, r.Client, leftovers.CleanConfig{Run: rec.RunID})
		if err != nil || len(ls) != 1 {
			t.Fatalf("leftovers.FindLeftovers: %v, %+v", err, ls)
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
	n, err := leftovers.RemoveLeftovers(ctx, r.Client, []leftovers.Leftover{l})
	if err != nil || n != 3 {
		t.Errorf("leftovers.RemoveLeftovers: %d, %v", n, err)
	}
	if left, _ := server.ScanKeys(ctx, r.Client, server.RunPrefix(rec.RunID)); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}

// a run suspended (Ctrl-Z) longer than its heartbeat's TTL
// has lost its marker, but its process on this machine still runs: clean
// leaves its keys (removed, the resumed run would find its state gone
// and say VIOLATED). Once the process is gone, they are removed.
func TestSuspendedRunLive(t *testing.T) {
	r := redistest.Open(t)
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
	rec := leftovers.RunRecord{RunID: server.NewRunID(), Started: time.Now().UTC(), PID: pid, Process: leftovers.ProcIdentity(pid)}
	b, _ := json.Marshal(rec)
	// the record only: the marker expired while the process was stopped
	r.Client.Set(ctx, leftovers.RecordKey(rec.RunID), b, leftovers.RecordTTL)
	r.Client.Set(ctx, server.RunPrefix(rec.RunID)+"k", "v", time.Minute)
	ls, err := leftovers.FindLeftovers(ctx, r.Client, leftovers.CleanConfig{})
	if err != nil || len(ls) != 1 || !ls[0].Live || ls[0].Remove {
		t.Fatalf("a stopped run's keys: %v, %+v; want live, kept", err, ls)
	}
	if n, err := leftovers.RemoveLeftovers(ctx, r.Client, ls); n != 0 || err != nil {
		t.Errorf("removed %d keys of a stopped run (%v)", n, err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	ls, err = leftovers.FindLeftovers(ctx, r.Client, leftovers.CleanConfig{})
	if err != nil || len(ls) != 1 || ls[0].Live || !ls[0].Remove {
		t.Fatalf("a dead run's keys: %v, %+v; want to remove", err, ls)
	}
}
