// Package enginetest gives the container tests their Redis image. It is
// apart from redistest, the throwaway servers every other test uses, so
// that only the tests that start a container link the container engine.
package enginetest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"

	"github.com/ratelab/ratelab/harness/engine"
)

// Image returns the container image the container tests use: the
// RATELAB_REDIS_IMAGE environment variable (`make test` builds the image
// and sets it), else engine.LocalImage, built here from the host's
// redis-server when Docker answers. It skips t when no Docker engine
// answers and RATELAB_REDIS_IMAGE is unset (Docker may truly be absent);
// with RATELAB_REDIS_IMAGE set, Docker is expected and its absence fails t.
func Image(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// also turns testcontainers' reaper off before its configuration is read
	err := engine.DockerHealthy(ctx, 5*time.Second)
	if img := os.Getenv(engine.ImageEnv); img != "" {
		if err != nil {
			t.Fatalf("%s=%s but %v", engine.ImageEnv, img, err)
		}
		return img
	}
	testcontainers.SkipIfProviderIsNotHealthy(t)
	if err := engine.BuildLocalImage(ctx, engine.LocalImage, nil); err != nil {
		t.Fatalf("build %s: %v", engine.LocalImage, err)
	}
	return engine.LocalImage
}
