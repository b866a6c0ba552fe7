package algorithms

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/limit"
	"github.com/redis/go-redis/v9"
)

//go:embed bucketed_hash.lua
var bucketedHashSrc string

var bucketedHashScript = NewLuaScript(bucketedHashSrc)

// BucketedHash is Josiah Carlson's bucketed sliding window: one HASH per key
// holding, for each of several limits, a counter per sub-window block of
// length Precision, the running total and the oldest counted block. A request
// is accepted when, for every limit, the total of the last ceil(W/Precision)
// blocks plus its cost fits.
//
// Boundary behaviour: the counted blocks start at a block boundary, so units
// accepted early in their block are counted for up to one Precision less than
// a full window. Within any trailing window of length W it can admit up to
// 2x the limit when a burst lands at the end of a block and the next burst
// lands just after that block is dropped. Smaller Precision narrows that gap
// and costs one hash field per block.
//
// Source: seed 003 (Josiah Carlson, 2014, "over_limit_sliding_window"), with
// time in integer µs, fields named by ms, and Retry-After computed from the
// blocks. Keys: the key itself (one HASH).
type BucketedHash struct {
	rdb    redis.Scripter
	limits []limit.Limit
	args   []any // n, then label, window_us, limit, precision_us per limit
	min    int64 // the smallest limit: the largest cost that can ever fit
}

var _ Scripted = (*BucketedHash)(nil)

// NewBucketedHash returns a bucketed-hash limiter enforcing every limit at
// once (for example 10 per 1s, 120 per 60s and 240 per 1h with 60s
// precision). A zero Precision becomes Window/10. rdb may be a Client, Ring
// or ClusterClient.
func NewBucketedHash(rdb redis.Scripter, limits ...limit.Limit) (*BucketedHash, error) {
	if len(limits) == 0 {
		return nil, fmt.Errorf("bucketed-hash: at least one limit is needed")
	}
	b := &BucketedHash{rdb: rdb, args: []any{len(limits)}}
	for i, l := range limits {
		if err := l.Validate(); err != nil {
			if len(limits) > 1 {
				err = &field.Error{Name: fmt.Sprintf("limits[%d]", i+1), Err: err}
			}
			return nil, err
		}
		if l.Precision == 0 {
			l.Precision = l.Window / 10 // under 1 ms for windows under 10 ms: labelled in µs
		}
		if l.Precision < time.Microsecond {
			return nil, fmt.Errorf("bucketed-hash: limit %d: precision must be >= 1µs", i+1)
		}
		b.limits = append(b.limits, l)
		label := strconv.FormatInt(l.Window.Milliseconds(), 10) + ":" + strconv.FormatInt(l.Precision.Milliseconds(), 10)
		if l.Window%time.Millisecond != 0 || l.Precision%time.Millisecond != 0 {
			label = strconv.FormatInt(l.Window.Microseconds(), 10) + "us:" + strconv.FormatInt(l.Precision.Microseconds(), 10)
		}
		b.args = append(b.args, label, l.Window.Microseconds(), l.Count, l.Precision.Microseconds())
		if b.min == 0 || l.Count < b.min {
			b.min = l.Count
		}
	}
	return b, nil
}

// Name returns "bucketed-hash".
func (b *BucketedHash) Name() string { return "bucketed-hash" }

// Describe lists the limits, e.g. "50 per 10s (precision 1s)".
func (b *BucketedHash) Describe() string {
	parts := make([]string, len(b.limits))
	for i, l := range b.limits {
		parts[i] = l.String()
	}
	return strings.Join(parts, ", ")
}

// Allow implements Limiter: the script call of Call, decoded.
func (b *BucketedHash) Allow(ctx context.Context, key string, cost int64, at Clock) (Decision, error) {
	return Decide(ctx, b.rdb, b, key, cost, at)
}

// Call implements Scripted.
func (b *BucketedHash) Call(key string, cost int64, at Clock) (ScriptCall, error) {
	return newCall(b, key, cost, at)
}

// WriteCall implements CallWriter.
func (b *BucketedHash) WriteCall(c *ScriptCall, key string, cost int64, at Clock) error {
	if err := CheckCost(b.Name(), cost, b.min); err != nil {
		return err
	}
	*c = ScriptCall{Script: bucketedHashScript.Run, Expiry: bucketedHashScript.Expiry, Keys: append(c.Keys[:0], key), Args: append(append(c.Args[:0], cost, at.arg()), b.args...), DecidedAt: at.decidedAt()}
	return nil
}

// Decode implements Scripted: the reply {allowed, remaining, retry_after_us, now_us}.
func (b *BucketedHash) Decode(c ScriptCall, reply any) (Decision, error) {
	return decodeCommon(c, reply)
}

// Capabilities implements Limiter: injected µs clock, weighted cost, a state per key.
func (b *BucketedHash) Capabilities() Capabilities { return builtIn }
