//go:build hostile

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"
)

// The hostile pass (`make hostile`, not part of make
// test): the attacks a hostile user or a broken machine makes, each run
// against the ratelab binary as a process (RATELAB_BIN, or one built
// here) beside a throwaway redis-server holding a user's keys. Each
// attack has its expected exit code and message; every one is checked
// for a panic or a runtime abort; after all of them the user's keys must
// be byte-identical, every other key must carry a TTL, no ACL user but
// default may remain, no ratelab process may be left running and no
// temporary file left in a results directory. A summary table is printed.
func TestHostile(t *testing.T) {
	bin := os.Getenv("RATELAB_BIN")
	if bin == "" {
		bin = buildBinary(t)
	}
	v := startVictim(t)
	c := v.client(t)
	fillForeign(t, c, 3000)
	before := takeSnapshot(t, c)
	url := "redis://" + v.addr
	// the user's own Function library: FCALL userfn answers "user"
	if err := c.Do(context.Background(), "FUNCTION", "LOAD", userLib).Err(); err != nil {
		t.Fatal(err)
	}
	functions := c.Do(context.Background(), "FUNCTION", "DUMP").Val()
	work := t.TempDir()
	path := func(name string) string { return filepath.Join(work, name) }

	fifo := path("fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) string {
		if err := os.WriteFile(path(name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return path(name)
	}
	nul := write("nul.csv", string(make([]byte, 4096)))
	traffic := write("traffic.csv", "timestamp,key\n1,a\n2,b\n")
	mine := write("mine.lua", "return 1\n")
	notLua := write("notlua.lua", "return 1 +\n")
	outside := write("outside.txt", "the user's file")
	prof := write("cpu.prof", "the user's profile")
	escapes, err := filepath.Abs("testdata/hostile/escapes.lua")
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("../../algorithms/sliding_log.lua")
	if err != nil {
		t.Fatal(err)
	}
	small := []string{"--scenarios", "boundary-burst", "--algorithms", "fixed-window", "--format", "csv"}

	type attack struct {
		name string
		args []string
		exit int           // wanted
		msg  string        // in stderr
		fast bool          // must end within 1 s (the contract for endless inputs)
		pre  func()        // before
		post func() string // after: "" or what went wrong
	}
	noEscapes := func(out *string) func() string {
		return func() string {
			if strings.ContainsAny(*out, "\x1b\x07") {
				return "a control character reached the terminal"
			}
			return ""
		}
	}
	unchanged := func(file, want string) func() string {
		return func() string {
			if b, _ := os.ReadFile(file); string(b) != want {
				return fmt.Sprintf("%s overwritten", filepath.Base(file))
			}
			return ""
		}
	}
	// a second client's faults, a second into the command (mid-run)
	later := func(f func(ctx context.Context) error) func() {
		return func() {
			time.AfterFunc(time.Second, func() {
				if err := f(context.Background()); err != nil {
					t.Error(err)
				}
			})
		}
	}
	killClients := later(func(ctx context.Context) error {
		for range 3 {
			if err := c.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
				return err
			}
			time.Sleep(300 * time.Millisecond)
		}
		return nil
	})
	undo := func(args ...any) func() string {
		return func() string {
			if err := c.Do(context.Background(), args...).Err(); err != nil {
				return fmt.Sprintf("%v: %v", args, err)
			}
			return ""
		}
	}
	slow := slowEndpoint(t, 300*time.Millisecond)
	capacity := func(out string) []string {
		return []string{"capacity", "--redis", url, "--algorithms", "sliding-log", "--limits", "1000", "--keys", "4000", "--budget", "400000", "--out", path(out), "--format", "csv"}
	}
	var output string // the last attack's stdout+stderr
	envFile := write(".env", "REDIS_PASSWORD=hostile-secret\n")
	// a client-side script: attack, then a fixed window; exit 2 with msg,
	// no secret, no forged line, the script named once in the last line
	sandbox := func(name, lua string, extra []string, msg string) attack {
		file := write("sandbox-"+strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' {
				return r
			}
			return '-'
		}, strings.ToLower(name))+".lua", lua+"\nlocal n = redis.call('INCR', KEYS[1])\nredis.call('PEXPIRE', KEYS[1], 1000)\nif n <= 10 then return 1 end\nreturn 0\n")
		args := []string{"verify", "--client-side", "--redis", url, "--script", file, "--limit", "10", "--window", "1s", "--out", path("out-" + filepath.Base(file))}
		return attack{name: "client-side " + name, args: append(args, extra...), exit: exitUsage, msg: msg, post: func() string {
			lines := strings.Split(strings.TrimSpace(output), "\n")
			switch last := lines[len(lines)-1]; {
			case strings.Contains(output, "hostile-secret"):
				return "a file's secret in the output"
			case strings.Contains(output, "::error") || strings.Contains(output, "::add-mask") || strings.Contains(output, `"holds"`):
				return "the script's lines in the output"
			case strings.Contains(output, "kept failing"):
				return "said Redis kept failing"
			case strings.Count(last, filepath.Base(file)) != 1:
				return fmt.Sprintf("the script named %d times", strings.Count(last, filepath.Base(file)))
			}
			return ""
		}}
	}
	var attacks []attack
	for _, fl := range []struct{ cmd, flag string }{
		{"verify", "--config"}, {"verify", "--script"}, {"run", "--scenario-file"}, {"run", "--traffic"}, {"run", "--script"},
	} {
		for _, p := range []string{"/dev/zero", fifo} {
			attacks = append(attacks, attack{
				name: fmt.Sprintf("%s %s %s", fl.cmd, fl.flag, filepath.Base(p)),
				args: []string{fl.cmd, "--redis", url, "--limit", "10", "--window", "1s", fl.flag, p, "--out", path("out-" + fl.flag[2:] + filepath.Base(p))},
				exit: exitUsage, msg: "not a regular file", fast: true,
			})
		}
	}
	attacks = append(attacks,
		attack{name: "traffic of NUL bytes", args: []string{"run", "--redis", url, "--traffic", nul, "--limit", "10", "--window", "1s", "--out", path("out-nul")},
			exit: exitUsage, msg: "binary data"},
		attack{name: "run to a new --out (for the next two)", args: append([]string{"run", "--redis", url, "--out", path("run1")}, small...), exit: exitOK},
		attack{name: "report DIR with a planted symlink", args: []string{"report", path("run1")}, exit: exitOK,
			pre: func() {
				_ = os.Remove(path("run1/report.md"))
				if err := os.Symlink(outside, path("run1/report.md")); err != nil {
					t.Fatal(err)
				}
			},
			post: unchanged(outside, "the user's file")},
		attack{name: "report of a forged results.json (ANSI)", args: []string{"report", path("run1")}, exit: exitOK,
			pre: func() {
				b, _ := os.ReadFile(path("run1/results.json"))
				b = bytes.ReplaceAll(b, []byte(`"fixed-window"`), []byte(`"\u001b]0;owned\u0007\u001b[2Jfixed-window"`))
				if err := os.WriteFile(path("run1/results.json"), b, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			post: noEscapes(&output)},
		attack{name: "bench --cpuprofile EXISTING", args: []string{"bench", "--redis", url, "--cpuprofile", prof, "--out", path("bench0")},
			exit: exitUsage, msg: "already exists", post: unchanged(prof, "the user's profile")},
		attack{name: "verify --window 1000000h", args: []string{"verify", "--redis", url, "--algorithm", "sliding-log", "--limit", "10", "--window", "1000000h"},
			exit: exitUsage, msg: "--window: at most 3650d"},
		attack{name: "verify --limit 10/2562047h", args: []string{"verify", "--redis", url, "--algorithm", "sliding-log", "--limit", "10/2562047h"},
			exit: exitUsage, msg: "--limit: "},
		attack{name: "bench --procs 100000", args: []string{"bench", "--redis", url, "--procs", "100000", "--out", path("bench1")},
			exit: exitUsage, msg: "--procs: "},
		attack{name: "--arg '{now_us % 0}'", args: []string{"verify", "--redis", url, "--script", script, "--arg", "{now_us % 0}", "--limit", "10", "--window", "1s"},
			exit: exitUsage, msg: "--arg: "},
		attack{name: "run --limit 1e18", args: []string{"run", "--redis", url, "--limit", "1e18", "--out", path("out-limit")}, exit: exitUsage, msg: "at most 100000"},
		attack{name: "verify --min-fidelity NaN", args: []string{"verify", "--redis", url, "--algorithm", "sliding-log", "--limit", "10", "--window", "1s", "--min-fidelity", "NaN"},
			exit: exitUsage, msg: "--min-fidelity: "},
		attack{name: "run --scenarios a,a", args: []string{"run", "--redis", url, "--scenarios", "steady,steady", "--out", path("out-aa")}, exit: exitUsage, msg: "--scenarios: "},
		attack{name: "run --algorithms ''", args: []string{"run", "--redis", url, "--algorithms", "", "--out", path("out-empty")}, exit: exitUsage, msg: "--algorithms: "},
		attack{name: "verify --limit 10/0s", args: []string{"verify", "--redis", url, "--algorithm", "sliding-log", "--limit", "10/0s"}, exit: exitUsage, msg: "--limit: "},
		attack{name: "run --algorithms fixed-window,fixed-window", args: []string{"run", "--redis", url, "--algorithms", "fixed-window,fixed-window", "--scenarios", "boundary-burst", "--out", path("out-twice")},
			exit: exitUsage, msg: "--algorithms: fixed-window given twice"},
		attack{name: "run --traffic with --script (dropped)", args: []string{"run", "--redis", url, "--traffic", traffic, "--limit", "10", "--window", "1s", "--script", mine, "--out", path("out-dropped")},
			exit: exitUsage, msg: "--script: "},
		attack{name: "run --script that does not compile", args: []string{"run", "--redis", url, "--script", notLua, "--scenarios", "boundary-burst", "--out", path("out-notlua")},
			exit: exitUsage, msg: "does not compile"},
		attack{name: "script reply with escapes", args: []string{"verify", "--redis", url, "--script", escapes, "--key", "{key}", "--limit", "10", "--window", "1s"},
			exit: exitUsage, post: noEscapes(&output)},
		// client-side Lua: only what a Redis script has, bounded in time and memory
		sandbox("dofile('.env')", "dofile('"+envFile+"')", nil, "nonexistent global variable 'dofile'"),
		sandbox("print: CI commands, a forged verdict", "print('::error file=x::forged') print('::add-mask::x') print('{\"verdict\":\"holds\"}')",
			[]string{"--format", "json"}, "nonexistent global variable 'print'"),
		sandbox("backtracking string.find", "redis.call('GET', KEYS[1]) string.find(string.rep('a', 30000), '.-.-.-.-.-b')",
			[]string{"--timeout", "1s", "--max-outage", "2s"}, "ran past its call's time bound"),
		sandbox("string.rep('x', 2^33)", "local s = string.rep('x', 2^33)", nil, "string.rep: the result would be 8589934592 bytes"),
		sandbox("doubling .. loop", "local s = 'xxx' while true do s = s .. s end", []string{"--timeout", "30s"}, "..: the result would be 805306368 bytes"),
		sandbox("loop after the first calls", "if redis.call('INCR', KEYS[1] .. ':n') > 3 then while true do end end", nil, "ran past its call's time bound"),
		// a state of the server named, not what it left behind
		attack{name: "capacity, CLIENT KILL mid-fill (reconnects)", args: capacity("cap-kill"), exit: exitOK, pre: killClients},
		attack{name: "bench, CLIENT KILL mid-run (reconnects)", args: []string{"bench", "--redis", url, "--algorithms", "sliding-log", "--duration", "3s", "--clients", "4", "--paths", "allow", "--out", path("bench-kill"), "--format", "csv"},
			exit: exitOK, pre: killClients},
		attack{name: "capacity, maxmemory reached mid-run", args: capacity("cap-oom"), exit: exitUsage, msg: "Redis is out of memory (maxmemory 100000 B reached, policy noeviction)",
			pre: later(func(ctx context.Context) error { return c.ConfigSet(ctx, "maxmemory", "100000").Err() }), post: undo("CONFIG", "SET", "maxmemory", "0")},
		attack{name: "run, REPLICAOF mid-run", args: []string{"run", "--redis", url, "--clock", "client", "--scenarios", "overload", "--algorithms", "sliding-log", "--window", "1s", "--out", path("run-ro"), "--format", "csv"},
			exit: exitUsage, msg: "Redis became a read-only replica",
			pre: later(func(ctx context.Context) error { return c.Do(ctx, "REPLICAOF", "127.0.0.1", "1").Err() }), post: undo("REPLICAOF", "NO", "ONE")},
		attack{name: "verify --http slower than the window", args: []string{"verify", "--http", slow, "--limit", "5", "--window", "200ms"},
			exit: exitUsage, msg: "no answer fit one window"},
		attack{name: "verify on the user's Redis", args: []string{"verify", "--redis", url, "--algorithm", "sliding-log", "--limit", "10", "--window", "300ms"}, exit: exitOK},
		attack{name: "bench on the user's Redis", args: []string{"bench", "--redis", url, "--algorithms", "fixed-window", "--requests", "3000", "--clients", "2", "--out", path("bench2"), "--format", "csv"}, exit: exitOK},
	)
	// a user's script sending what the policy on a user's commands refuses
	// (usercmd): client-side, each call a real command from ratelab; the
	// Functions, the user's keys and their names stay the user's
	userFunctions := func() string {
		if d := c.Do(context.Background(), "FUNCTION", "DUMP").Val(); d != functions {
			return "FUNCTION DUMP changed"
		}
		if got := c.Do(context.Background(), "FCALL", "userfn", "0").Val(); got != "user" {
			return fmt.Sprintf("FCALL userfn answered %v", got)
		}
		if got := c.Get(context.Background(), "app:0").Val(); got != "value-0" {
			return "app:0 is " + got
		}
		return ""
	}
	noKeyNames := func() string {
		if strings.Contains(output, "app:") {
			return "a user key name in the output"
		}
		return userFunctions()
	}
	for _, u := range []struct{ name, call, named string }{
		{"FUNCTION LOAD REPLACE", `redis.call('FUNCTION', 'LOAD', 'REPLACE', "#!lua name=userlib\nredis.register_function('userfn', function() return 'attacker' end)")`, "FUNCTION LOAD"},
		{"FUNCTION FLUSH", `redis.call('FUNCTION', 'FLUSH')`, "FUNCTION FLUSH"},
		{"FUNCTION DELETE", `redis.call('FUNCTION', 'DELETE', 'userlib')`, "FUNCTION DELETE"},
		{"SCRIPT FLUSH", `redis.call('SCRIPT', 'FLUSH')`, "SCRIPT FLUSH"},
		{"AUTH then SET", `redis.call('AUTH', 'default', 'x') redis.call('SET', 'app:0', 'owned')`, "AUTH"},
		{"SCAN", `local r = redis.call('SCAN', '0', 'COUNT', '1000') if #r[2] > 0 then return r[2] end`, "SCAN"},
		{"RANDOMKEY", `local k = redis.call('RANDOMKEY') if k then return k end`, "RANDOMKEY"},
	} {
		file := write(strings.ToLower(strings.ReplaceAll(u.name, " ", "-"))+".lua", u.call+"\n"+fixedWindowBody)
		args := []string{"verify", "--redis", url, "--script", file, "--arg", "{window_ms}", "--arg", "{limit}", "--limit", "10", "--window", "1s"}
		attacks = append(attacks, attack{name: "client-side " + u.name, args: append(args, "--client-side", "--out", path("out-cs-"+filepath.Base(file))),
			exit: exitUsage, msg: "called " + u.named + ": not allowed", post: noKeyNames})
		if u.named == "SCAN" || u.named == "RANDOMKEY" {
			attacks = append(attacks, attack{name: "server-side " + u.name, args: append(args, "--out", path("out-ss-"+filepath.Base(file))),
				exit: exitUsage, msg: "it called " + u.named, post: noKeyNames})
		}
	}

	// outputs: secrets, CI output and the out dir (hostile_outputs_test.go)
	for _, a := range outputsAttacks(t, work, &output) {
		attacks = append(attacks, attack{name: a.name, args: a.args, exit: a.exit, msg: a.msg, pre: a.pre, post: a.post})
	}

	// replays: a counter-example verify offers to replay is replayed (a
	// script that reads no clock included), and a forged verify.json is
	// refused by its trace's count before the rest of it is read
	firstHit, err := filepath.Abs("../../docs/examples/first-hit-window.lua")
	if err != nil {
		t.Fatal(err)
	}
	attacks = append(attacks,
		attack{name: "verify a script that reads no clock (first hit)", args: []string{"verify", "--redis", url, "--script", firstHit, "--arg", "{window_ms}", "--arg", "{limit}",
			"--allowed", "reply != nil", "--limit", "10", "--window", "1s", "--out", path("first-hit")}, exit: exitFail, msg: "violated"},
		attack{name: "--replay of its counter-example", args: []string{"verify", "--redis", url, "--replay", path("first-hit/verify.json")},
			exit: exitFail, msg: "violated again"},
		attack{name: "--replay of a forged trace of 2x10^6 requests", args: []string{"verify", "--redis", url, "--replay", path("forged/verify.json")},
			exit: exitUsage, msg: "trace longer than a verification keeps", fast: true,
			pre: func() { forgeTrace(t, path("first-hit/verify.json"), path("forged/verify.json"), 2_000_000) }},
	)

	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "attack\texit\twant\ttime\tresult")
	failures := 0
	row := func(name string, exit, want int, took time.Duration, problem string) {
		result := "ok"
		if problem != "" {
			result, failures = "FAIL: "+problem, failures+1
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2fs\t%s\n", name, exit, want, took.Seconds(), result)
	}
	run := func(args []string) (exit int, stdout, stderr string, took time.Duration) {
		// a memory bound so that an endless read is an error, not the machine's OOM killer
		cmd := exec.Command("sh", append([]string{"-c", `ulimit -v 4000000; exec "$0" "$@"`, bin}, args...)...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		timer := time.AfterFunc(20*time.Second, func() { _ = cmd.Process.Kill() }) // a hang, shown as exit -1
		_ = cmd.Wait()                                                             // the exit code is what is checked
		timer.Stop()
		return cmd.ProcessState.ExitCode(), o.String(), e.String(), time.Since(start)
	}
	for _, a := range attacks {
		if a.pre != nil {
			a.pre()
		}
		exit, stdout, stderr, took := run(a.args)
		output = stdout + stderr
		var problems []string
		if exit != a.exit {
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			problems = append(problems, fmt.Sprintf("exit %d: %.300q", exit, lines[len(lines)-1]))
		}
		if strings.Contains(stderr, "panic:") || strings.Contains(stderr, "fatal error:") || strings.Contains(stderr, "goroutine ") {
			problems = append(problems, "panic")
		}
		if a.msg != "" && !strings.Contains(stderr, a.msg) {
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			problems = append(problems, fmt.Sprintf("message %.200q", lines[len(lines)-1]))
		}
		if a.fast && took > time.Second {
			problems = append(problems, "slower than 1s")
		}
		if a.post != nil {
			if p := a.post(); p != "" {
				problems = append(problems, p)
			}
		}
		row(a.name, exit, a.exit, took, strings.Join(problems, "; "))
	}

	// two runs started together on one new --out: one writes, one is refused
	shared := path("shared")
	var wg sync.WaitGroup
	exits := make([]int, 2)
	start := time.Now()
	for i := range exits {
		wg.Add(1)
		go func() {
			defer wg.Done()
			exits[i], _, _, _ = run(append([]string{"run", "--redis", url, "--out", shared}, small...))
		}()
	}
	wg.Wait()
	problem := ""
	if !(exits[0] == 0) != (exits[1] == 0) || exits[0]+exits[1] != exitUsage {
		problem = fmt.Sprintf("exits %v: both wrote to one --out", exits)
	}
	row("two runs, one new --out", exits[0]+exits[1], exitUsage, time.Since(start), problem)

	// a signal stops verify within 1 s whatever its client-side script does
	runaway := write("runaway.lua", "redis.call('GET', KEYS[1]) local s = string.rep('a', 30000) while true do string.find(s, '.-.-.-.-.-b') end\nreturn 1\n")
	for _, sg := range []struct {
		sig  syscall.Signal
		exit int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		cmd := exec.Command(bin, "verify", "--client-side", "--redis", url, "--script", runaway, "--limit", "10", "--window", "1s", "--timeout", "60s", "--max-outage", "60s", "--out", path("out-runaway-"+sg.sig.String()))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second) // into verify's trials
		sent := time.Now()
		_ = cmd.Process.Signal(sg.sig)
		timer := time.AfterFunc(20*time.Second, func() { _ = cmd.Process.Kill() })
		_ = cmd.Wait()
		timer.Stop()
		took, problem := time.Since(sent), ""
		switch {
		case cmd.ProcessState.ExitCode() != sg.exit:
			problem = fmt.Sprintf("exit %d", cmd.ProcessState.ExitCode())
		case took > time.Second:
			problem = "slower than 1s after the signal"
		}
		row("client-side runaway pattern, "+sg.sig.String(), cmd.ProcessState.ExitCode(), sg.exit, took, problem)
	}

	// what must hold after every attack
	ctx := context.Background()
	after := takeSnapshot(t, c)
	problem = ""
	for k, b := range before {
		if a, ok := after[k]; !ok || a.dump != b.dump {
			problem = "user key " + k + " changed or gone"
			break
		}
	}
	row("user keys byte-identical", len(after), len(before), 0, problem)
	problem = ""
	it := c.Scan(ctx, 0, "*", 1000).Iterator()
	for it.Next(ctx) {
		if k := it.Val(); !strings.HasPrefix(k, "app:") {
			if ttl := c.PTTL(ctx, k).Val(); ttl < 0 {
				problem = "key " + k + " has no TTL"
				break
			}
		}
	}
	row("no ratelab key without a TTL", 0, 0, 0, problem)
	users, _ := c.Do(ctx, "ACL", "USERS").StringSlice()
	problem = ""
	if len(users) != 1 {
		problem = fmt.Sprintf("ACL users %v", users)
	}
	row("no ACL user left", len(users), 1, 0, problem)
	problem = ""
	if out, _ := exec.Command("pgrep", "-f", "^"+regexp.QuoteMeta(bin)+"( |$)").Output(); len(bytes.TrimSpace(out)) > 0 {
		problem = "processes left: " + strings.Join(strings.Fields(string(out)), ",")
	}
	row("no ratelab process left", 0, 0, 0, problem)
	left, _ := filepath.Glob(filepath.Join(work, "*", ".ratelab-*"))
	problem = ""
	if len(left) > 0 {
		problem = fmt.Sprintf("temporary files left: %v", left)
	}
	row("no temporary file left", len(left), 0, 0, problem)

	_ = tw.Flush()
	fmt.Printf("\nhostile pass of %s: %d checks failed\n%s", bin, failures, table.String())
	if failures > 0 {
		t.Errorf("%d hostile checks failed (table above)", failures)
	}
}

// slowEndpoint is an HTTP endpoint on loopback that answers every request
// 200 OK after d.
func slowEndpoint(t *testing.T, d time.Duration) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
		}
		_, _ = w.Write([]byte("ok\n"))
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String() + "/"
}

// forgeTrace writes to out the verify.json at in with its counter-example's
// trace made n requests long (written as it goes, never held whole).
func forgeTrace(t *testing.T, in, out string, n int) {
	t.Helper()
	b, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	ce, _ := rec["counter_example"].(map[string]any)
	trace, _ := ce["trace"].(map[string]any)
	if trace == nil {
		t.Fatalf("%s: no trace to forge", in)
	}
	const mark = "@@requests@@"
	trace["requests"] = mark
	b, err = json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	head, tail, _ := strings.Cut(string(b), `"`+mark+`"`)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString(head + "[")
	for i := range n {
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, `{"at_us":%d,"key":"user","cost":1,"client":0,"allowed":true}`, i)
	}
	w.WriteString("]" + tail)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
