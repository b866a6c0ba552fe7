package vclock_test

import (
	"context"
	"os"
	"testing"

	"github.com/ratelab/ratelab/harness/engine/enginetest"
)

var (
	srv *enginetest.Server
	ctx = context.Background()
)

func TestMain(m *testing.M) {
	srv = enginetest.Start()
	code := m.Run()
	srv.Close()
	os.Exit(code)
}
