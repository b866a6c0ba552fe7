package engine

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/measure"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
	"github.com/testcontainers/testcontainers-go/wait"
)

// DefaultImage is the container image of `--redis container` when neither
// --redis-image nor RATELAB_REDIS_IMAGE names one. It is pulled from Docker
// Hub when it is not present locally.
const DefaultImage = "redis:7.4-alpine"

// ImageEnv is the environment variable that names the container image.
const ImageEnv = "RATELAB_REDIS_IMAGE"

// LocalImage is the tag `make redis-image` (BuildLocalImage) gives the image
// it builds from the host's redis-server, for machines without a registry.
const LocalImage = "ratelab/redis:local"

// ContainerLabel is set ("true") on every container ratelab starts, so that
// leftovers of a killed ratelab (kill -9 gives it no chance to clean up) can
// be found: docker ps -a --filter label=dev.ratelab.owned=true.
const ContainerLabel = "dev.ratelab.owned"

// ContainerPIDLabel holds the process id of the ratelab that started the
// container.
const ContainerPIDLabel = "dev.ratelab.pid"

// image returns the container image to use: o.Image, else $RATELAB_REDIS_IMAGE, else DefaultImage.
func (o Options) image() string {
	if o.Image != "" {
		return o.Image
	}
	return envOr(ImageEnv, DefaultImage)
}

var ryukOnce sync.Once

// disableRyuk turns testcontainers' reaper container off (ratelab removes
// its containers itself, and the reaper's image cannot be pulled on machines
// without a registry) unless the user set TESTCONTAINERS_RYUK_DISABLED, and
// silences testcontainers' own log (ratelab reports what matters). It must
// run before testcontainers reads its configuration (once per process).
func disableRyuk() {
	ryukOnce.Do(func() {
		if _, set := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !set {
			_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		}
		tclog.SetDefault(tclog.NewNoopLogger())
	})
}

// DockerHealthy returns nil when a Docker engine answers within timeout,
// else an error saying why not (no socket, permission denied, ...).
func DockerHealthy(ctx context.Context, timeout time.Duration) (err error) {
	disableRyuk()
	defer func() {
		// testcontainers panics on some broken setups
		if r := recover(); r != nil {
			err = fmt.Errorf("docker: %v", r)
		}
	}()
	p, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(tclog.NewNoopLogger()))
	if err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	defer closeProvider(p)
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := p.Health(hctx); err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	return nil
}

// startContainer starts a Redis container from image with testcontainers-go
// (its redis module) and connects to it. The container's port is published
// on the Docker host's address only (loopback for a local engine). Close
// removes the container; so does a failed start.
//
// It waits up to timeout for the container; its client dials with dial.
func startContainer(ctx context.Context, image string, timeout, dial time.Duration) (*server.Redis, error) {
	disableRyuk()
	if err := DockerHealthy(ctx, min(timeout, 5*time.Second)); err != nil {
		return nil, fmt.Errorf("%w: the container engine needs a Docker engine: %v", ErrNoRedis, err)
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	quiet := tclog.NewNoopLogger()
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(quiet),
		testcontainers.WithLabels(map[string]string{ContainerLabel: "true", ContainerPIDLabel: strconv.Itoa(os.Getpid())}),
		// the module waits with `sh` inside the container; a FROM scratch
		// image has none: check the port from outside, then the log line
		testcontainers.WithWaitStrategy(
			wait.ForListeningPort("6379/tcp").SkipInternalCheck().WithStartupTimeout(timeout),
			wait.ForLog("Ready to accept connections").WithStartupTimeout(timeout),
		),
	}
	if ip := publishAddr(sctx); ip.IsValid() {
		opts = append(opts, testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{
				network.MustParsePort("6379/tcp"): {{HostIP: ip, HostPort: "0"}},
			}
		}))
	}
	ctr, err := tcredis.Run(sctx, image, opts...)
	stop := func() error {
		if ctr == nil {
			return nil
		}
		// a fresh context: Close also runs after Ctrl-C cancelled ctx
		tctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		grace := 2 * time.Second
		if _, ok := server.GraceDeadline(); ok {
			grace = 0 // Ctrl-C: killed at once, a throwaway (docker stop's 2 s held the exit up to 3.2 s)
		}
		return ctr.Terminate(tctx, testcontainers.StopTimeout(grace))
	}
	if err != nil {
		serr := stop() // a container that would not stop is said with the error
		msg := oneLine(err.Error())
		if strings.Contains(msg, "No such image") || strings.Contains(msg, "pull access denied") ||
			strings.Contains(msg, "not found") || strings.Contains(msg, "manifest unknown") || strings.Contains(msg, "dial tcp") && strings.Contains(msg, "registry") {
			msg += fmt.Sprintf(" (image %s cannot be pulled here: build one from the local redis-server with `make redis-image` and pass --redis-image %s)", image, LocalImage)
		}
		return nil, errors.Join(fmt.Errorf("start a Redis container from %s: %s", image, msg), serr)
	}
	endpoint, err := ctr.PortEndpoint(sctx, "6379/tcp", "")
	if err != nil {
		return nil, errors.Join(fmt.Errorf("no published port on the Redis container from %s: %w", image, err), stop())
	}
	if h, p, err := net.SplitHostPort(endpoint); err == nil && h == "localhost" {
		endpoint = net.JoinHostPort("127.0.0.1", p)
	}
	c := redis.NewClient(&redis.Options{Addr: endpoint, DialTimeout: dial, MaxRetries: -1, ContextTimeoutEnabled: true})
	server.Track(c)
	var r *server.Redis
	id := ctr.GetContainerID()
	r = server.New(c, measure.RedisInfo{Mode: "container", Addr: endpoint}, func() error {
		containerIDs.Delete(r)
		return stop()
	})
	containerIDs.Store(r, id)
	version, err := server.WaitReady(sctx, c, timeout)
	if err != nil {
		// Close removes the container: a failure there leaves it behind, so it is said too
		return nil, errors.Join(fmt.Errorf("the Redis container from %s at %s did not answer: %w", image, endpoint, err), r.Close())
	}
	r.Info.Version = version
	return r, nil
}

// publishAddr is the host address to publish the container's port on:
// loopback when ratelab reaches the Docker host by loopback (a local
// engine), so a Redis without a password is not offered to the whole
// network; invalid (all addresses) otherwise.
func publishAddr(ctx context.Context) netip.Addr {
	p, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(tclog.NewNoopLogger()))
	if err != nil {
		return netip.Addr{}
	}
	defer closeProvider(p)
	localEngine(ctx, p)
	host, err := p.DaemonHost(ctx)
	if err != nil {
		return netip.Addr{}
	}
	if host == "localhost" {
		return netip.MustParseAddr("127.0.0.1")
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return ip
	}
	return netip.Addr{}
}

// localEngine handles a Docker engine that runs in ratelab's own network
// namespace although ratelab runs in a container (/.dockerenv): there
// testcontainers guesses the host from the default route, which is another
// machine. When a local interface lies in the engine's bridge network, the
// engine is local: published ports are on 127.0.0.1, and
// TESTCONTAINERS_HOST_OVERRIDE is set to it (unless the user set it).
func localEngine(ctx context.Context, p *testcontainers.DockerProvider) {
	if _, set := os.LookupEnv("TESTCONTAINERS_HOST_OVERRIDE"); set {
		return
	}
	if _, err := os.Stat("/.dockerenv"); err != nil {
		return // not in a container: testcontainers uses localhost
	}
	if !strings.HasPrefix(p.Client().DaemonHost(), "unix://") {
		return
	}
	nw, err := p.Client().NetworkInspect(ctx, "bridge", client.NetworkInspectOptions{})
	if err != nil {
		return
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return
	}
	for _, cfg := range nw.Network.IPAM.Config {
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(ipn.IP)
			if ok && cfg.Subnet.IsValid() && cfg.Subnet.Contains(ip.Unmap()) {
				_ = os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
				return
			}
		}
	}
}

// BuildLocalImage builds a Redis image named tag FROM scratch out of the
// redis-server on PATH, for machines with Docker but without a registry.
// The image holds the binary (symlinks dereferenced, named redis-server:
// Redis picks its mode from argv[0]), every library `ldd` lists and the
// dynamic loader, and a configuration (protected-mode no, no persistence)
// given in the ENTRYPOINT, since container options replace CMD. The build
// context is an in-memory tar. Build output goes to log (nil: discarded).
// Errors name the step that failed (no redis-server, ldd, Docker, the build).
func BuildLocalImage(ctx context.Context, tag string, log io.Writer) error {
	disableRyuk()
	if log == nil {
		log = io.Discard
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("build %s: redis-server is not on PATH (Debian: apt-get install redis-server)", tag)
	}
	archive, err := imageContext(bin)
	if err != nil {
		return fmt.Errorf("build %s: %w", tag, err)
	}
	repo, version, ok := strings.Cut(tag, ":")
	if !ok {
		version = "latest"
	}
	p, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(tclog.NewNoopLogger()))
	if err != nil {
		return fmt.Errorf("build %s: docker: %w", tag, err)
	}
	defer closeProvider(p)
	req := &testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{
		ContextArchive: bytes.NewReader(archive),
		Repo:           repo,
		Tag:            version,
		KeepImage:      true,
		BuildLogWriter: log,
	}}
	if _, err := p.BuildImage(ctx, req); err != nil {
		return fmt.Errorf("build %s: %w", tag, err)
	}
	return nil
}

// imageRedisConf is the image's redis.conf: reachable through the published
// port (protected mode off: the port is published on the Docker host's own
// address), nothing written to disk.
const imageRedisConf = `bind * -::*
protected-mode no
port 6379
save ""
appendonly no
dir /data
`

// imageContext returns the build context of BuildLocalImage as a tar:
// Dockerfile and rootfs/ (the binary, its libraries, the loader, redis.conf).
func imageContext(bin string) ([]byte, error) {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil, err
	}
	out, err := exec.Command("ldd", real).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", real, err)
	}
	libs := lddPaths(string(out))
	if len(libs) == 0 {
		return nil, fmt.Errorf("ldd %s listed no libraries: is it a static binary? then copy it alone", real)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	addDir := func(d string) error {
		var parts []string
		for d != "/" && d != "." && !dirs[d] {
			parts = append(parts, d)
			d = filepath.Dir(d)
		}
		sort.Strings(parts)
		for _, p := range parts {
			dirs[p] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "rootfs" + p + "/", Mode: 0o755}); err != nil {
				return err
			}
		}
		return nil
	}
	addFile := func(name string, mode int64, data []byte) error {
		if err := addDir(filepath.Dir(name)); err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "rootfs" + name, Mode: mode, Size: int64(len(data))}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	// copy a host file's contents (symlinks followed) to the same path
	copyFile := func(hostPath, imagePath string, mode int64) error {
		data, err := os.ReadFile(hostPath) // follows symlinks
		if err != nil {
			return err
		}
		return addFile(imagePath, mode, data)
	}
	if err := copyFile(real, "/redis-server", 0o755); err != nil {
		return nil, err
	}
	var libDirs []string
	for _, l := range libs {
		if err := copyFile(l, l, 0o755); err != nil {
			return nil, err
		}
		if d := filepath.Dir(l); !slices.Contains(libDirs, d) {
			libDirs = append(libDirs, d)
		}
	}
	if err := addFile("/redis.conf", 0o644, []byte(imageRedisConf)); err != nil {
		return nil, err
	}
	if err := addDir("/data"); err != nil {
		return nil, err
	}
	version := "unknown"
	// run by its own name: as redis-check-rdb it would not print its version
	if v, err := exec.Command(bin, "--version").Output(); err == nil {
		if m := regexp.MustCompile(`v=(\S+)`).FindSubmatch(v); m != nil {
			version = string(m[1])
		}
	}
	dockerfile := fmt.Sprintf(`FROM scratch
COPY rootfs/ /
ENV LD_LIBRARY_PATH=%s
LABEL org.opencontainers.image.title="redis-server %s copied from the build host by ratelab (make redis-image)"
EXPOSE 6379
ENTRYPOINT ["/redis-server", "/redis.conf"]
`, strings.Join(libDirs, ":"), version)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile))}); err != nil {
		return nil, err
	}
	if _, err := tw.Write([]byte(dockerfile)); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// lddPaths returns the absolute paths in ldd's output: the libraries
// ("libssl.so.3 => /lib/x86_64-linux-gnu/libssl.so.3 (0x...)") and the
// loader ("/lib64/ld-linux-x86-64.so.2 (0x...)"); the vDSO has none.
func lddPaths(out string) []string {
	var paths []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i, w := range f {
			if strings.HasPrefix(w, "/") && (i == 0 || f[i-1] == "=>") {
				paths = append(paths, w)
				break
			}
		}
	}
	return paths
}

// containerIDs maps the *server.Redis of each container ratelab started
// and has not closed yet to the container's ID.
var containerIDs sync.Map

// ContainerID is the ID of the container ratelab started for r ("container")
// while r is open; empty for the other kinds of Redis and after Close.
func ContainerID(r *server.Redis) string {
	id, _ := containerIDs.Load(r)
	s, _ := id.(string)
	return s
}

// Containers returns the IDs of the containers ratelab started (label
// ContainerLabel) that still exist, running or not: none after every Close.
// pid > 0 keeps those of that ratelab process only (ContainerPIDLabel).
// Errors: no Docker engine.
func Containers(ctx context.Context, pid int) ([]string, error) {
	disableRyuk()
	p, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(tclog.NewNoopLogger()))
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	defer closeProvider(p)
	f := client.Filters{}.Add("label", ContainerLabel+"=true")
	if pid > 0 {
		f = f.Add("label", ContainerPIDLabel+"="+strconv.Itoa(pid))
	}
	res, err := p.Client().ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	ids := make([]string, len(res.Items))
	for i, c := range res.Items {
		ids[i] = c.ID
	}
	return ids, nil
}

// closeProvider closes p's Docker client (its connections to the engine);
// a deferred cleanup whose error is ignored: no container nor image depends
// on it, and the work it served has returned its own error.
func closeProvider(p *testcontainers.DockerProvider) { _ = p.Close() }
