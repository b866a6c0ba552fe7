package evict_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/evict"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
)

// pressure gives the server of r users small keys, then maxmemory
// used_memory + headroom under policy.
func pressure(t *testing.T, r *server.Redis, policy string, users int, headroom int64) {
	t.Helper()
	ctx := context.Background()
	p := r.Client.Pipeline()
	for i := range users {
		p.Set(ctx, fmt.Sprintf("user:%d", i), strings.Repeat("v", 100), 0)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	ms, err := evict.Read(ctx, r.Client)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Client.ConfigSet(ctx, "maxmemory-policy", policy).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Client.ConfigSet(ctx, "maxmemory", strconv.FormatInt(ms[0].UsedMemory+headroom, 10)).Err(); err != nil {
		t.Fatal(err)
	}
}

// Check: what is safe and what is refused, per policy and estimate.
func TestCheckEviction(t *testing.T) {
	cases := []struct {
		policy   string
		headroom int64
		estimate int64
		refused  bool
	}{
		{"noeviction", 1 << 20, 1 << 30, false},   // writes fail (OOM) rather than evict
		{"allkeys-lru", 64 << 20, 1 << 20, false}, // fits with the margin
		{"allkeys-lru", 64 << 20, 63 << 20, true}, // fits, but not with the margin
		{"allkeys-lfu", 4 << 20, 8 << 20, true},
		{"volatile-ttl", 4 << 20, 8 << 20, true}, // ratelab's own keys have TTLs
		{"allkeys-random", 64 << 20, -1, true},   // unknown estimate
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%d/%d", tc.policy, tc.headroom, tc.estimate), func(t *testing.T) {
			r := redistest.Open(t)
			pressure(t, r, tc.policy, 100, tc.headroom)
			ms, err := evict.Check(context.Background(), r.Client, r.Info.Addr, tc.estimate)
			var ee *evict.Error
			if got := errors.As(err, &ee); got != tc.refused {
				t.Fatalf("refused = %v (%v), want %v", got, err, tc.refused)
			}
			if len(ms) != 1 || ms[0].Policy != tc.policy || ms[0].MaxMemory == 0 {
				t.Errorf("readings %+v", ms)
			}
			if tc.refused && !strings.Contains(err.Error(), "maxmemory-policy "+tc.policy) {
				t.Errorf("error: %v", err)
			}
		})
	}
}

// The watch stops a writer whose writes eat the headroom before the server
// evicts anything, and names an eviction when one happens.
func TestWatchEvictions(t *testing.T) {
	cases := []struct {
		name    string
		chunk   int           // bytes per write
		batch   int           // writes per round trip
		pace    time.Duration // between round trips
		evicted bool          // the watch is expected to see evictions
	}{
		{"paced writer stopped before evicting", 32 << 10, 1, time.Millisecond, false},
		{"burst past maxmemory is named", 1 << 20, 24, 50 * time.Millisecond, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := redistest.Open(t)
			pressure(t, r, "allkeys-lru", 2000, 16<<20)
			ctx := context.Background()
			ms, err := evict.Check(ctx, r.Client, r.Info.Addr, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			value := strings.Repeat("x", tc.chunk)
			if tc.evicted {
				// the burst lands before the watch's first look (on a loaded
				// machine a look in the middle of it would stop the writer
				// before anything is evicted): the look must name evictions
				p := r.Client.Pipeline()
				for k := range tc.batch {
					p.Set(ctx, server.KeyPrefix+"burst:"+strconv.Itoa(k), value, time.Minute)
				}
				if _, err := p.Exec(ctx); err != nil {
					t.Fatal(err)
				}
			}
			fired := make(chan *evict.Error, 1)
			stop := evict.Watch(ctx, r.Client, r.Info.Addr, ms, evict.Config{}, func(e *evict.Error) { fired <- e })
			defer stop()
			var got *evict.Error
		write:
			for i := 0; i < 10_000; i++ {
				select {
				case got = <-fired:
					break write
				default:
				}
				p := r.Client.Pipeline()
				for k := range tc.batch {
					p.Set(ctx, server.KeyPrefix+"w:"+strconv.Itoa(i*tc.batch+k), value, time.Minute)
				}
				if _, err := p.Exec(ctx); err != nil {
					t.Fatal(err)
				}
				time.Sleep(tc.pace)
			}
			if got == nil {
				select {
				case got = <-fired:
				case <-time.After(2 * time.Second):
					t.Fatal("the watch never fired")
				}
			}
			if !got.Stopped || (got.Evicted > 0) != tc.evicted {
				t.Errorf("got %+v: %v", got, got)
			}
			after, err := evict.Read(ctx, r.Client)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.evicted && after[0].EvictedKeys != 0 {
				t.Errorf("evicted_keys %d after the watch fired", after[0].EvictedKeys)
			}
		})
	}
}

// A user the ACL refuses CONFIG still gets maxmemory and the policy, from
// INFO memory.
func TestReadMemoryWithoutConfig(t *testing.T) {
	r := redistest.Open(t)
	ctx := context.Background()
	pressure(t, r, "volatile-lfu", 10, 8<<20)
	if err := r.Client.Do(ctx, "ACL", "SETUSER", "noconfig", "on", ">pw", "~*", "+@all", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: r.Info.Addr, Username: "noconfig", Password: "pw"})
	defer c.Close()
	if err := c.ConfigGet(ctx, "maxmemory").Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("CONFIG GET as noconfig: %v, want NOPERM", err)
	}
	want, err := evict.Read(ctx, r.Client)
	if err != nil {
		t.Fatal(err)
	}
	got, err := evict.Read(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].MaxMemory != want[0].MaxMemory || got[0].Policy != "volatile-lfu" || !got[0].Evicting() {
		t.Errorf("without CONFIG: %+v, with: %+v", got[0], want[0])
	}
}
