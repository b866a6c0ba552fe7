package engine

import (
	"os"
	"strings"
)

// Redis from the environment, as CI services hand it over.
const (
	EnvRedis    = "RATELAB_REDIS" // ratelab's own: any spec OpenWith takes
	EnvRedisURL = "REDIS_URL"     // the common one: a URL
)

// FromEnv returns the Redis spec the environment gives, trimmed, and the
// variable it came from: RATELAB_REDIS, else REDIS_URL; "", "" when
// neither is set (or both are blank). A caller's own spec should win over
// both.
func FromEnv() (spec, name string) {
	for _, name := range []string{EnvRedis, EnvRedisURL} {
		if v := strings.TrimSpace(os.Getenv(name)); v != "" {
			return v, name
		}
	}
	return "", ""
}
