package server

import (
	"context"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"
)

// IsTimeout reports whether err is a call that timed out (a context
// deadline or a network timeout), as opposed to an answer from Redis.
func IsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// IsRedisError reports whether err is an error reply from Redis (a script
// error, NOSCRIPT, NOPERM...) rather than a failure to reach it.
func IsRedisError(err error) bool {
	var re redis.Error
	return err != nil && errors.As(err, &re)
}
