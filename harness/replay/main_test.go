package replay_test

import (
	"context"
	"os"
	"testing"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/measure"
)

var srv *redistest.Server

func TestMain(m *testing.M) {
	srv = redistest.Start()
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

var ctx = context.Background()

func rowsByAlgorithm(res *measure.Results) map[string]measure.Row {
	out := map[string]measure.Row{}
	for _, r := range res.Results {
		out[r.Algorithm] = r
	}
	return out
}
