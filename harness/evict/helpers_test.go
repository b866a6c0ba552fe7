package evict_test

import (
	"testing"

	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/internal/redistest"
)

// openExec starts a throwaway redis-server for one test.
func openExec(t *testing.T) *server.Redis {
	t.Helper()
	srv := redistest.Start()
	t.Cleanup(func() { _ = srv.Close() })
	return srv.Redis
}
