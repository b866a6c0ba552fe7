package vclock_test

import (
	"context"
	"os"
	"testing"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
)

var (
	srv *redistest.Server
	ctx = context.Background()
)

func TestMain(m *testing.M) {
	srv = redistest.Start()
	code := m.Run()
	srv.Close()
	os.Exit(code)
}
