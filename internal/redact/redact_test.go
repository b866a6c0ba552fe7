package redact

import (
	"strings"
	"testing"
)

// URL hides the password whatever it holds, also in a URL that does
// not parse, and leaves what has none as it is.
func TestURL(t *testing.T) {
	for _, tc := range []struct{ name, url, want string }{
		{"no password", "redis://127.0.0.1:6379/2", "redis://127.0.0.1:6379/2"},
		{"a password", "redis://:S3cret@h:6379", "redis://:xxxxx@h:6379"},
		{"user and password", "redis://alice:S3cret@h:6379/1", "redis://alice:xxxxx@h:6379/1"},
		{"a password alone (redis-cli reads it so)", "redis://S3cret@h:6379", "redis://xxxxx@h:6379"},
		{"a literal %", "redis://u:pa%zzS3cret@h:6379", "redis://u:xxxxx@h:6379"},
		{"percent-encoded", "redis://u:pa%40S3%3Acret%25@h:6379", "redis://u:xxxxx@h:6379"},
		{"a literal @", "redis://u:p@S3cret@h:6379", "redis://u:xxxxx@h:6379"},
		{"a literal :", "redis://u:p:S3cret@h:6379", "redis://u:xxxxx@h:6379"},
		{"a literal / ? #", "redis://u:p/S3?c#ret@h:6379", "redis://u:xxxxx@h:6379"},
		{"TLS", "rediss://u:S3cret@h:6380", "rediss://u:xxxxx@h:6380"},
		{"cluster", "redis+cluster://u:S3cret@h1:7000,h2:7000", "redis+cluster://u:xxxxx@h1:7000,h2:7000"},
		{"not a URL", ":S3cret@h:6379", ":xxxxx@h:6379"},
		{"one slash", "redis:/u:S3cret@h", "redis:xxxxx@h"},
		{"not a URL, no colon", "S3cret@h", "xxxxx@h"},
		{"an engine name", "exec", "exec"},
		{"an HTTP endpoint", "https://u:S3cret@api.example/limit?k=1", "https://u:xxxxx@api.example/limit?k=1"},
	} {
		got := URL(tc.url)
		if got != tc.want {
			t.Errorf("%s: URL(%q) = %q, want %q", tc.name, tc.url, got, tc.want)
		}
		if strings.Contains(got, "S3") || strings.Contains(got, "cret") {
			t.Errorf("%s: %q shows the password", tc.name, got)
		}
	}
}
