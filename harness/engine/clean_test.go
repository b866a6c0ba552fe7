package engine

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"
)

func openExec(t *testing.T) *Redis {
	t.Helper()
	r, err := Open(context.Background(), "exec", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestIsRunID(t *testing.T) {
	for s, want := range map[string]bool{
		NewRunID():             true,
		"20261122T030515-cfab": true,
		"20261122T030515-zzzz": false, // not hex
		"20261122T030515-CFAB": false, // NewRunID writes lower case
		"20261399T030515-cfab": false, // no such date
		"20261122T250515-cfab": false,
		"20261122T030515-cfa":  false,
		"20261122T030515cfab0": false,
		"users":                false,
		"session":              false,
		"access-check":         false,
		"":                     false,
	} {
		if got := IsRunID(s); got != want {
			t.Errorf("IsRunID(%q) = %v, want %v", s, got, want)
		}
	}
}

// A registered run refreshes its marker beyond AliveTTL, notices when it
// vanishes, and stops refreshing at Stop.
func TestRegisterHeartbeat(t *testing.T) {
	r := openExec(t)
	ctx := context.Background()
	id := NewRunID()
	reg, err := Register(ctx, r.Client, id)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	if ttl := r.Client.PTTL(ctx, RecordKey(id)).Val(); ttl < RecordTTL-time.Minute {
		t.Errorf("record TTL %v, want %v", ttl, RecordTTL)
	}
	time.Sleep(AliveTTL + AliveEvery)
	if ttl := r.Client.PTTL(ctx, MarkerKey(id)).Val(); ttl < AliveTTL-2*AliveEvery {
		t.Fatalf("marker TTL %v after %v: not refreshed", ttl, AliveTTL+AliveEvery)
	}
	if reg.Vanished() {
		t.Fatal("Vanished before anything was removed")
	}
	r.Client.Del(ctx, MarkerKey(id))
	time.Sleep(2 * AliveEvery)
	if !reg.Vanished() {
		t.Error("the marker was removed, Vanished is false")
	}
	if r.Client.Exists(ctx, MarkerKey(id)).Val() != 1 {
		t.Error("the marker was not written again")
	}
	reg.Stop()
	reg.Stop()
	before := r.Client.PTTL(ctx, MarkerKey(id)).Val()
	time.Sleep(2 * AliveEvery)
	if after := r.Client.PTTL(ctx, MarkerKey(id)).Val(); after > before-AliveEvery {
		t.Errorf("marker TTL %v, was %v: still refreshed after Stop", after, before)
	}
}

// A run whose marker is there but whose process on this machine is gone
// (kill -9) is not live: clean need not wait out AliveTTL. A process that
// runs is live.
func TestKilledRunNotLive(t *testing.T) {
	r := openExec(t)
	ctx := context.Background()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	rec := RunRecord{RunID: NewRunID(), Started: time.Now().UTC(), PID: pid, Process: procIdentity(pid)}
	if rec.Process == "" {
		t.Fatal("no identity for a running process")
	}
	b, _ := json.Marshal(rec)
	r.Client.Set(ctx, MarkerKey(rec.RunID), b, AliveTTL)
	r.Client.Set(ctx, RecordKey(rec.RunID), b, RecordTTL)
	r.Client.Set(ctx, RunPrefix(rec.RunID)+"k", "v", time.Minute)
	find := func() Leftover {
		t.Helper()
		ls, err := FindLeftovers(ctx, r.Client, CleanConfig{Run: rec.RunID})
		if err != nil || len(ls) != 1 {
			t.Fatalf("FindLeftovers: %v, %+v", err, ls)
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
	n, err := RemoveLeftovers(ctx, r.Client, []Leftover{l})
	if err != nil || n != 3 {
		t.Errorf("RemoveLeftovers: %d, %v", n, err)
	}
	if left, _ := ScanKeys(ctx, r.Client, RunPrefix(rec.RunID)); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}
