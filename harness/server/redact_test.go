package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness/server"
)

// A URL that does not parse is refused with no piece of its password in
// the error (net/url quotes the URL, and a bad escape's characters).
func TestBadURLHidesPassword(t *testing.T) {
	for _, spec := range []string{
		"redis://:pQ%zzS3cret@127.0.0.1:1",
		"redis://u:pQ%zzS3cret@127.0.0.1:1",
		"redis://u:pQ/S3cret@127.0.0.1:1",
		"redis://u:pQ 1/S3cret@127.0.0.1:1",
		"redis+cluster://u:pQ/S3cret@127.0.0.1:1",
		"redis+cluster://u:pQ%zzS3cret@127.0.0.1:1",
	} {
		_, err := server.OpenURL(context.Background(), spec, server.Options{Timeout: 300 * time.Millisecond})
		if err == nil {
			t.Errorf("%s: opened", spec)
			continue
		}
		for _, piece := range []string{"S3", "zz", "pQ", "cret"} {
			if strings.Contains(err.Error(), piece) {
				t.Errorf("%s: %q shows %q of the password", spec, err, piece)
			}
		}
	}
}
