// Package engine provisions a Redis for ratelab: a throwaway redis-server
// (exec), a container (testcontainers-go), a throwaway local Cluster, and
// the image `make redis-image` builds. OpenWith also takes the user's own
// server or Cluster by URL and hands those to server.OpenURL. Every kind
// comes back as a *server.Redis, which is what the harness and the
// studies take.
//
// engine is the only package of ratelab that imports Docker's client
// (testcontainers-go, moby, OpenTelemetry through them): only cmd/ratelab
// and the container tests' image helper (harness/engine/enginetest) import it. A Go program that
// brings its own Redis imports harness/server (go-redis only) instead.
package engine
