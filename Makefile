# ratelab — make run (the main job), make test (what CI runs).
GO      ?= go
BIN     := bin/ratelab
ARGS    ?=

.PHONY: all build run test test-short vet fmt redis clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/ratelab

# Compare the algorithms on every scenario against a throwaway Redis; results in results/<run id>/.
run: redis build
	./$(BIN) run $(ARGS)

# Unit and integration tests against real redis-server processes the tests start.
test: redis
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

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

clean:
	rm -rf bin
