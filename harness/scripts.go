package harness

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
)

// LoadScripts loads every algorithm's script (SCRIPT LOAD), so pipelined
// EVALSHA finds them: pipelines do not fall back to EVAL on NOSCRIPT.
func LoadScripts(ctx context.Context, c redis.Scripter) error {
	for _, s := range algorithms.Scripts() {
		if err := s.Load(ctx, c).Err(); err != nil {
			return fmt.Errorf("SCRIPT LOAD: %w", err)
		}
	}
	return nil
}

// replyAllowed reads the verdict of a decision script's reply: its first
// element, an integer, is above 0 when the request was accepted (ratelab's
// scripts answer 1; redis_rate's GCRA the units allowed).
func replyAllowed(v any) bool {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return false
	}
	n, ok := arr[0].(int64)
	return ok && n > 0
}

// queuedReply is the placeholder accepted reply bench's queueing scripter
// hands to Allow while the real call waits in a pipeline.
var queuedReply = []any{int64(1), int64(0), int64(0), int64(0)}
