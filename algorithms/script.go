package algorithms

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ParseReply parses the reply every ratelab script returns:
// {allowed 0|1, remaining, retry_after_us, now_us}.
func ParseReply(v any) (Decision, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 4 {
		return Decision{}, fmt.Errorf("unexpected script reply %v: want {allowed, remaining, retry_after_us, now_us}", v)
	}
	var n [4]int64
	for i, e := range arr {
		x, ok := e.(int64)
		if !ok {
			return Decision{}, fmt.Errorf("unexpected script reply %v: element %d is %T, want integer", v, i+1, e)
		}
		n[i] = x
	}
	d := Decision{
		Allowed:    n[0] == 1,
		Remaining:  max(n[1], 0),
		RetryAfter: time.Duration(max(n[2], 0)) * time.Microsecond,
		DecidedAt:  time.UnixMicro(n[3]),
	}
	if d.Allowed {
		d.RetryAfter = 0
	}
	return d, nil
}

// NewSalt returns a short random string (6 hex digits) that makes members
// or request ids written by this process unique against other processes
// writing the same key.
func NewSalt() string {
	var b [3]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error (Go 1.24)
	return hex.EncodeToString(b[:])
}

// HashTagged returns key unchanged when it already has a Redis Cluster hash
// tag (a non-empty "{...}"), else "{" + key + "}", so that keys derived from
// it by appending a suffix hash to the same slot.
func HashTagged(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key
		}
	}
	return "{" + key + "}"
}

// LoadScripts loads every algorithm's script into c (SCRIPT LOAD), so that
// pipelined EVALSHA finds them: pipelines do not fall back to EVAL on
// NOSCRIPT. On a Cluster, go-redis loads them on every master.
func LoadScripts(ctx context.Context, c redis.Scripter) error {
	for _, s := range Scripts() {
		if err := s.Load(ctx, c).Err(); err != nil {
			return fmt.Errorf("SCRIPT LOAD: %w", err)
		}
	}
	return nil
}
