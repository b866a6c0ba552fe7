package custom_test

import (
	"context"
	"os"
	"testing"

	"github.com/ratelab/ratelab/harness/engine/enginetest"
)

var srv *enginetest.Server

func TestMain(m *testing.M) {
	srv = enginetest.Start()
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

var ctx = context.Background()
