package custom_test

import (
	"context"
	"os"
	"testing"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
)

var srv *redistest.Server

func TestMain(m *testing.M) {
	srv = redistest.Start()
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

var ctx = context.Background()
