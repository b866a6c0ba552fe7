# ratelab — make run (the main job), make test (what CI runs).
GO      ?= go
BIN     := bin/ratelab
ARGS    ?=

.PHONY: all build run test process vet fmt lint redis nginx chromium tmux xmllint exec-adapters clean load fuzz bench redis-image replay-big hostile docs-check

all: build

# the version `ratelab --version` prints and every result records (internal/version)
VERSION ?= $(shell git describe --always --dirty 2>/dev/null)
build:
	$(GO) build -ldflags "-X github.com/ratelab/ratelab/internal/version.Version=$(VERSION)" -o $(BIN) ./cmd/ratelab

# Compare the algorithms on every scenario against a throwaway Redis; results in results/<run id>/.
run: redis build
	./$(BIN) run $(ARGS)

# Unit and integration tests against real redis-server (and nginx) processes the tests start,
# a local Redis Cluster, TLS and ACL servers, and (when Docker answers) a Redis container from
# the image redis-image builds. TESTFLAGS=-v shows every test (CI: container tests passed, not skipped).
# RATELAB_REQUIRE_TOOLS=1: a missing nginx, chromium or tmux fails its test (a plain go test skips it).
TESTFLAGS ?=
# go test -timeout: the slowest package took up to 15 min under -race on a loaded machine; Go's
# default of 10 min failed it there, so the bound leaves room (it only detects hangs).
TEST_TIMEOUT ?= 30m
# Three runs at once, their outputs one after the other, so that every test runs once:
#   - with -race, the packages whose own code starts goroutines (go statements, AfterFunc), where a
#     data race can live (RACE_PKGS; internal/testenv's TestRacePackages keeps it equal to the code).
#     Their tests marked testenv.SkipUnderRace (tables of verdicts, large strings: CPU under the race
#     detector, not more of the same code) skip there, and those that call testenv.Race() run smaller;
#   - without -race, those tests of RACE_PKGS (found by the awk below), whole: the packages' other
#     tests have just run with the race detector on, and their assertions are the same;
#   - without -race, every other package.
# A plain `go test ./...` still runs every test. go vet checks every package and its tests first, the
# process and hostile suites' files included, so go test's own vet pass (a subset of it) is off.
# Test binaries link without DWARF (-ldflags=-w: stack traces keep file and line; only a debugger
# would miss it), which halves each link.
# The packages whose tests take longest come first in their run, so that they start first and the
# runs do not end on one long package alone (go test runs packages in the order they are listed).
RACE_PKGS := ./harness/verify ./reports/plots ./harness/bench ./harness ./harness/capacity ./harness/replay \
  ./custom/clientside ./custom/endpoint ./custom/execlimiter ./harness/busy ./harness/demo/live ./harness/evict ./harness/leftovers \
  ./harness/localredis ./harness/server ./internal/progress
LONG_PKGS := ./cmd/ratelab ./harness/engine
RACE_TEST_FILES = $(wildcard $(addsuffix /*_test.go,$(RACE_PKGS)))
OTHER_PKGS = $(filter-out $(RACE_PKGS) $(LONG_PKGS),$(shell $(GO) list -f '{{.Dir}}' ./... | sed 's|^$(CURDIR)|.|'))
GOTEST = $(GO) test -vet=off -ldflags=-w -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS)
test: redis nginx chromium tmux xmllint exec-adapters
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet -tags 'process hostile' ./...
	@image=$$($(GO) run ./harness/engine/redisimage -if-docker -tag $(REDIS_IMAGE)) || exit 1; \
	  export RATELAB_REDIS_IMAGE=$$image RATELAB_REQUIRE_TOOLS=1; \
	  skipped=$$(awk '/^func /{f=""} /^func Test[A-Za-z0-9_]*[(]/{f=$$2; sub(/[(].*/,"",f)} /testenv[.](SkipUnderRace|Race)[(]/ && f!=""{print f}' $(RACE_TEST_FILES) | sort -u | paste -sd'|' -); \
	  skippedpkgs=$$(grep -lE 'testenv[.](SkipUnderRace|Race)[(]' $(RACE_TEST_FILES) | xargs -n1 dirname | sort -u | paste -sd' ' -); \
	  echo "RATELAB_REDIS_IMAGE=$$image RATELAB_REQUIRE_TOOLS=1 $(GOTEST) -run '^($$skipped)$$' $$skippedpkgs"; \
	  echo "RATELAB_REDIS_IMAGE=$$image RATELAB_REQUIRE_TOOLS=1 $(GOTEST) -race $(RACE_PKGS)"; \
	  echo "RATELAB_REDIS_IMAGE=$$image RATELAB_REQUIRE_TOOLS=1 $(GOTEST) $(LONG_PKGS) $(OTHER_PKGS)"; \
	  skiplog=$$(mktemp); racelog=$$(mktemp); trap 'rm -f "$$skiplog" "$$racelog"' EXIT; \
	  $(GOTEST) -run "^($$skipped)\$$" $$skippedpkgs >"$$skiplog" 2>&1 & skippid=$$!; \
	  $(GOTEST) -race $(RACE_PKGS) >"$$racelog" 2>&1 & racepid=$$!; \
	  $(GOTEST) $(LONG_PKGS) $(OTHER_PKGS); rc=$$?; \
	  wait $$skippid; skiprc=$$?; wait $$racepid; racerc=$$?; cat "$$skiplog" "$$racelog"; \
	  [ $$rc -eq 0 ] && [ $$skiprc -eq 0 ] && [ $$racerc -eq 0 ]

# The process suite, not part of make test (.ci/run runs it right after make test): ratelab
# as a process that is killed, stopped and interrupted (SIGKILL, SIGSTOP, SIGINT, Ctrl-C),
# beside redis-servers that are killed, stopped and faulted mid-run, and the container
# interrupted. These tests wait on the wall clock (a stall bound, a heartbeat's TTL), so they
# run on their own; every Test func of cmd/ratelab/*_process_test.go (build tag process).
PROCESS_TESTS = $(shell sed -n 's/^func \(Test[A-Za-z0-9_]*\)(t \*testing.T).*/\1/p' cmd/ratelab/*_process_test.go | paste -sd'|' -)
process: redis
	@image=$$($(GO) run ./harness/engine/redisimage -if-docker -tag $(REDIS_IMAGE)) || exit 1; \
	  export RATELAB_REDIS_IMAGE=$$image RATELAB_REQUIRE_TOOLS=1; \
	  echo "RATELAB_REDIS_IMAGE=$$image RATELAB_REQUIRE_TOOLS=1 $(GO) test -tags process -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) -run '^($(PROCESS_TESTS))$$' ./cmd/ratelab"; \
	  $(GO) test -tags process -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) -run '^($(PROCESS_TESTS))$$' ./cmd/ratelab

# The hostile pass, not part of make test: endless and planted files, unbounded
# flags, forged results and escaping replies against the built binary, beside a throwaway
# redis-server holding a user's keys; then user keys byte-identical, every other key with a TTL, no
# ACL user, process or temporary file left. Prints a table (attack, exit, want, time, result).
# RATELAB_BIN=path checks another binary (e.g. one built from main, for a before/after table).
RATELAB_BIN ?= $(CURDIR)/$(BIN)
hostile: redis build
	RATELAB_BIN=$(RATELAB_BIN) $(GO) test -tags hostile -count=1 -run TestHostile -timeout 20m -v ./cmd/ratelab

# Every quoted output in README.md and docs/*.md after a <!-- docs-check --> line, against a fresh run
# (make test runs it too); UPDATE=1 rewrites the quoted blocks from fresh output (review the diff).
docs-check: redis
	$(GO) test -count=1 -run '^TestDocs$$' ./cmd/ratelab/ $(if $(UPDATE),-update)

# staticcheck, deadcode and errcheck (from PATH: go install honnef.co/go/tools/cmd/staticcheck@latest
# golang.org/x/tools/cmd/deadcode@latest github.com/kisielk/errcheck@latest). Each exception is named
# where it lives: //lint:ignore with its reason, errcheck.excludes, `_ =` with a comment.
lint:
	staticcheck ./...
	@dead=$$(deadcode -test ./...); if [ -n "$$dead" ]; then echo "$$dead"; exit 1; fi
	errcheck -ignoretests -exclude errcheck.excludes ./...

# A Redis image FROM scratch out of the local redis-server (binary, its libraries, the loader),
# for --redis container on machines with Docker but no registry:
#   ./bin/ratelab run --redis container --redis-image ratelab/redis:local
REDIS_IMAGE ?= ratelab/redis:local
redis-image: redis
	$(GO) run ./harness/engine/redisimage -tag $(REDIS_IMAGE)

# Go benchmarks of each algorithm's Allow (allow and deny paths) against a throwaway redis-server;
# reports ns/op and the server's own µs per EVALSHA. BENCHTIME=3s for steadier figures.
BENCHTIME ?= 1s
bench: redis
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -benchmem ./algorithms/

# 10^6 decisions through sliding-log from 64 clients: no decision record lost or doubled; prints the peak RSS.
load: redis
	RATELAB_LOAD=1 $(GO) test -count=1 -run TestLoadMillion -v -timeout 20m ./harness/ | grep -E '^(load:|---|ok|FAIL|PASS)'

# A large replay: a generated 24 h access log (10^6 lines, 10^4 keys) through every
# algorithm that takes virtual time; prints wall time, decisions/s, peak RSS and the per-key figures.
replay-big: redis
	RATELAB_BIG=1 $(GO) test -count=1 -run TestReplayBig -v -timeout 30m ./harness/ | grep -vE '^replay: '

# Each fuzz target for $(FUZZTIME) (their seed corpora run in make test).
FUZZTIME ?= 60s
# FuzzCommandFlags: each exec runs a command (a few ms), so minimizing a new input for the
# default 60 s showed as a stall (0 execs/s for up to a minute of FUZZTIME): minimizing is bounded
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParseTemplate$$' -fuzztime $(FUZZTIME) ./algorithms/
	$(GO) test -run '^$$' -fuzz '^FuzzParseAllowedReply$$' -fuzztime $(FUZZTIME) ./algorithms/
	$(GO) test -run '^$$' -fuzz '^FuzzAllowedPredicate$$' -fuzztime $(FUZZTIME) ./algorithms/
	$(GO) test -run '^$$' -fuzz '^FuzzExprLegacy$$' -fuzztime $(FUZZTIME) ./scenarios/
	$(GO) test -run '^$$' -fuzz '^FuzzTargetFile$$' -fuzztime $(FUZZTIME) ./targets/
	$(GO) test -run '^$$' -fuzz '^FuzzRunFlags$$' -fuzztime $(FUZZTIME) ./cmd/ratelab/
	$(GO) test -run '^$$' -fuzz '^FuzzCommandFlags$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 200x ./cmd/ratelab/
	$(GO) test -run '^$$' -fuzz '^FuzzCapacityConfig$$' -fuzztime $(FUZZTIME) ./harness/capacity/
	$(GO) test -run '^$$' -fuzz '^FuzzParseResults$$' -fuzztime $(FUZZTIME) ./reports/

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

# redis-server must be on PATH: install Debian's package when it is missing.
redis:
	@if command -v redis-server >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  echo "ratelab: redis-server not found; installing Debian's redis-server package with apt-get"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends redis-server >/dev/null && \
	  echo "ratelab: installed $$(redis-server --version | cut -d' ' -f1-3)"; \
	else \
	  echo "ratelab: redis-server not found and this system has no apt-get. Get Redis one of these ways:"; \
	  echo "  - install your system's redis package so that redis-server is on PATH;"; \
	  echo "  - run one in Docker (docker run -p 6379:6379 redis:7.4-alpine) and pass --redis redis://localhost:6379;"; \
	  echo "  - point ratelab at any Redis you have: ./bin/ratelab run --redis redis://host:port"; \
	  exit 1; \
	fi

# The libraries the exec adapters of docs/adapters/ drive (custom/execlimiter's tests): Python's
# limits on redis-py and Ruby's rack-attack on redis-rb, from Debian's packages when missing.
exec-adapters:
	@if /usr/bin/python3 -c 'import limits, redis' >/dev/null 2>&1 && ruby -e 'require "rack/attack"; require "redis"' >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  echo "ratelab: installing Debian's python3-limits python3-redis ruby-rack-attack ruby-redis (for the exec adapter tests)"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends python3-limits python3-redis ruby-rack-attack ruby-redis >/dev/null; \
	else \
	  echo "ratelab: the exec adapters' libraries are missing and this system has no apt-get: install Python's limits and redis, Ruby's rack-attack and redis"; exit 1; \
	fi

# xmllint (the JUnit schema tests of reports and cmd/ratelab): Debian's libxml2-utils when missing.
xmllint:
	@if command -v xmllint >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  echo "ratelab: xmllint not found; installing Debian's libxml2-utils package (for the JUnit schema tests)"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends libxml2-utils >/dev/null; \
	else \
	  echo "ratelab: xmllint not found and this system has no apt-get: install libxml2 tools to run the JUnit schema tests"; exit 1; \
	fi

# nginx (for the HTTP black-box tests of verify): Debian's package when missing.
# The package starts a system nginx on port 80; the tests start their own, so it is stopped.
nginx:
	@if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  echo "ratelab: nginx not found; installing Debian's nginx package (for the verify --http tests)"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends nginx >/dev/null && \
	  { $$SUDO service nginx stop >/dev/null 2>&1 || true; }; \
	else \
	  echo "ratelab: nginx not found and this system has no apt-get: install nginx to run the verify --http tests"; exit 1; \
	fi

# headless Chromium (the report.html rendering test): Debian's chromium package when missing.
chromium:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  echo "ratelab: chromium not found; installing Debian's chromium package (for the report.html test)"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null; \
	else \
	  echo "ratelab: chromium not found and this system has no apt-get: install Chromium to run the report.html test"; exit 1; \
	fi

# tmux (the demo's real-terminal test): Debian's tmux package when missing.
tmux:
	@if command -v tmux >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  echo "ratelab: tmux not found; installing Debian's tmux package (for the demo terminal test)"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends tmux >/dev/null; \
	else \
	  echo "ratelab: tmux not found and this system has no apt-get: install tmux to run the demo terminal test"; exit 1; \
	fi

clean:
	rm -rf bin
