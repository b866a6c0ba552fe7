package verify_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/internal/testenv"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// startNginx starts Debian's nginx on a free loopback port with two
// limit_req zones, both 20 r/s: /strict (no burst) and /burst (burst=5 nodelay).
func startNginx(t *testing.T) string {
	t.Helper()
	bin := testenv.Tool(t, "nginx", "nginx", "/usr/sbin/nginx")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	conf := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  limit_req_zone $binary_remote_addr zone=strict:1m rate=20r/s;
  limit_req_zone $binary_remote_addr zone=burst:1m rate=20r/s;
  limit_req_status 429;
  server {
    listen 127.0.0.1:%[2]d;
    location = /strict { limit_req zone=strict; default_type text/plain; alias %[1]s/ok.txt; }
    location = /burst { limit_req zone=burst burst=5 nodelay; default_type text/plain; alias %[1]s/ok.txt; }
  }
}
`, dir, port)
	cf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", cf, "-p", dir, "-e", filepath.Join(dir, "error.log"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, _ := os.Create(filepath.Join(dir, "stdout.log"))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for i := 0; i < 100; i++ {
		if resp, err := http.Get(base + "/nope"); err == nil {
			resp.Body.Close()
			return base
		}
		time.Sleep(20 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
	t.Fatalf("nginx did not answer on %s: %s", base, log)
	return ""
}

// nginx limit_req as a black box, verified as 10 per 500ms. Without burst it
// never exceeds the limit, but as a leaky bucket it spaces requests 50 ms
// apart, so random overload gets less than a sliding window would give
// (measured: accepted / ideal 0.80 at 10 per 1s): starved by ratelab's rule.
// burst=5 nodelay admits the burst on top of the rate: violated.
func TestVerifyNginxLimitReq(t *testing.T) {
	t.Parallel()
	testenv.SkipUnderRace(t)
	base := startNginx(t)
	l := limit.Limit{Count: 10, Window: 500 * time.Millisecond}
	cases := []struct {
		path string
		want measure.Verdict
	}{
		{"/strict", measure.Starved},
		{"/burst", measure.Violated},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			h, err := custom.NewHTTPLimiter(base+c.path, l, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			// liveness is part of the verdict only when asked: this
			// test asks, as it expects nginx's starvation to fail the gate
			cfg := verifyConfig(l)
			cfg.MinFidelity = 0.9
			// every trial runs in real time, where a call past Timeout is an
			// error and any error makes the verdict INCONCLUSIVE: the default
			// 500 ms (the window) failed one call on a loaded machine (load
			// average ~15: "context deadline exceeded"). The limiter's own
			// 2 s is waited for instead: a slow answer is still judged, on
			// its send and receive times, so it can only keep a set out of
			// a window, never put one in
			cfg.Timeout = 2 * time.Second
			rep, err := verify.Run(ctx, nil, h, cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range rep.Families {
				if c.want == measure.Starved && f.Verdict == measure.Violated {
					t.Errorf("family %s violated: %+v", f.Family, rep.CounterExample)
				}
			}
			if rep.Verdict != c.want || rep.Errors != 0 {
				t.Errorf("verdict %s (%d errors %v), want %s; families %+v; counter-example %+v",
					rep.Verdict, rep.Errors, rep.ErrorSamples, c.want, rep.Families, rep.CounterExample)
			}
		})
	}
	// anything but 2xx and 429 is an error, not a verdict
	h, _ := custom.NewHTTPLimiter(base+"/nope", l, time.Second)
	if _, err := h.Allow(ctx, "k", 1, algorithms.RedisTime()); err == nil {
		t.Error("404: no error")
	}
}

// an endpoint that answers every request 200 OK, each
// later than the window, gives no decision that fits a window: verify
// stops at once with ErrNoAnswerFits (before: HOLDS, after 102 s). The
// endpoint is a real HTTP server on loopback.
func TestVerifyNoAnswerFitsAWindow(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-r.Context().Done():
		}
		_, _ = w.Write([]byte("ok\n"))
	})}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	lim := limit.Limit{Count: 5, Window: 200 * time.Millisecond}
	h, err := custom.NewHTTPLimiter("http://"+l.Addr().String()+"/", lim, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cfg := verifyConfig(lim)
	cfg.Timeout = 2 * time.Second
	start := time.Now()
	rep, err := verify.Run(ctx, nil, h, cfg)
	took := time.Since(start)
	if !errors.Is(err, verify.ErrNoAnswerFits) {
		t.Fatalf("report %+v, error %v; want ErrNoAnswerFits", rep, err)
	}
	// 5 probes of 300 ms: bounded, not the trials' minutes
	if took > 10*time.Second {
		t.Errorf("took %v", took)
	}
	t.Logf("%v in %v", err, took.Round(time.Millisecond))
}
