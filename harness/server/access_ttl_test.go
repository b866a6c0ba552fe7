package server_test

import (
	"bufio"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
)

// Every key CheckAccess writes (directly or from its probe script) is born
// with its TTL, so a kill -9 at any moment leaves no key without one: in
// the commands the server ran (MONITOR, the script's own included), a
// probe key is made only by SET ... PX/EX, and every other command that
// could make a key lands on a key so made and not removed since.
func TestCheckAccessKeysBornWithTTL(t *testing.T) {
	rd := redistest.Open(t)
	host, port, _ := strings.Cut(rd.Client.(*redis.Client).Options().Addr, ":")
	mon := exec.Command("redis-cli", "-h", host, "-p", port, "MONITOR")
	out, err := mon.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mon.Process.Kill(); _ = mon.Wait() })
	lines := bufio.NewScanner(out)
	if !lines.Scan() || strings.TrimSpace(lines.Text()) != "OK" {
		t.Fatalf("MONITOR: %q", lines.Text())
	}
	ctx := context.Background()
	if err := server.CheckAccess(ctx, rd.Client); err != nil {
		t.Fatal(err)
	}
	const end = "end-of-probe"
	if err := rd.Client.Echo(ctx, end).Err(); err != nil {
		t.Fatal(err)
	}
	// the commands that make a key that is missing
	makers := map[string]bool{"SET": true, "INCRBY": true, "INCR": true, "ZADD": true, "HSET": true, "HINCRBY": true, "GETSET": true, "APPEND": true}
	// the commands that may remove a key (emptied or deleted)
	removers := map[string]bool{"UNLINK": true, "DEL": true, "ZREMRANGEBYSCORE": true, "ZREM": true, "HDEL": true}
	quoted := regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
	born := map[string]bool{} // probe keys made with a TTL, not removed since
	seen := 0
	deadline := time.AfterFunc(10*time.Second, func() { _ = mon.Process.Kill() })
	defer deadline.Stop()
	for lines.Scan() {
		var args []string
		for _, m := range quoted.FindAllStringSubmatch(lines.Text(), -1) {
			args = append(args, m[1])
		}
		if len(args) == 2 && strings.EqualFold(args[0], "ECHO") && args[1] == end {
			break
		}
		if len(args) < 2 || !strings.Contains(args[1], server.AccessCheckInfix) {
			continue
		}
		cmd, key := strings.ToUpper(args[0]), args[1]
		seen++
		switch {
		case cmd == "SET":
			withTTL := false
			for _, a := range args[2:] {
				withTTL = withTTL || strings.EqualFold(a, "PX") || strings.EqualFold(a, "EX")
			}
			if !withTTL {
				t.Errorf("%s: a probe key written without a TTL", lines.Text())
			}
			born[key] = true
		case makers[cmd] && !born[key]:
			t.Errorf("%s: may make %s without a TTL", lines.Text(), key)
		case removers[cmd]:
			for _, k := range args[1:] {
				delete(born, k)
			}
		}
	}
	if seen < 20 {
		t.Fatalf("MONITOR showed %d commands on probe keys, want the probe's (at least 20)", seen)
	}
}
