package engine

import "testing"

// RATELAB_REDIS wins over REDIS_URL; blanks count as unset.
func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		ratelab, url, want, wantName string
	}{
		{"", "", "", ""},
		{" exec ", "redis://h:1", "exec", EnvRedis},
		{"  ", "redis://h:1", "redis://h:1", EnvRedisURL},
	} {
		t.Setenv(EnvRedis, tc.ratelab)
		t.Setenv(EnvRedisURL, tc.url)
		if got, name := FromEnv(); got != tc.want || name != tc.wantName {
			t.Errorf("%q, %q: got %q from %q, want %q from %q", tc.ratelab, tc.url, got, name, tc.want, tc.wantName)
		}
	}
}
