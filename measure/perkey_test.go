package measure

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestKeyTrackerMatchesPerKeyOracles checks the streaming tracker against
// MaxInWindow and Ideal run per key on whole slices, for random traffic.
func TestKeyTrackerMatchesPerKeyOracles(t *testing.T) {
	for seed := range 40 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		limit := int64(1 + rng.IntN(10))
		window := time.Duration(1+rng.IntN(50)) * time.Millisecond
		nkeys := 1 + rng.IntN(6)
		tr := NewKeyTracker(limit, window)
		byKey := map[string][]Event{}
		accByKey := map[string][]Event{}
		var at time.Duration
		for range 2000 {
			at += time.Duration(rng.IntN(3)) * time.Millisecond / 2 // ties too
			k := fmt.Sprintf("k%d", rng.IntN(nkeys))
			cost := int64(1 + rng.IntN(int(limit)))
			allowed := rng.IntN(3) > 0
			tr.Add(k, at, cost, allowed)
			byKey[k] = append(byKey[k], Event{At: at, Cost: cost})
			if allowed {
				accByKey[k] = append(accByKey[k], Event{At: at, Cost: cost})
			}
		}
		p, tot := tr.Summary()
		var ideal, worst, over int64
		for k, ev := range byKey {
			ideal += Ideal(ev, limit, window)
			m, _ := MaxInWindow(accByKey[k], window)
			worst = max(worst, m)
			if m > limit {
				over++
			}
		}
		if tot.Ideal != ideal || tot.MaxInWindow != worst || p.KeysOver != over || p.Keys != int64(len(byKey)) {
			t.Fatalf("seed %d: got ideal %d max %d over %d keys %d, want %d %d %d %d",
				seed, tot.Ideal, tot.MaxInWindow, over, p.Keys, ideal, worst, over, len(byKey))
		}
		if p.WorstMaxInWindow != worst || p.WorstRatio != float64(worst)/float64(limit) {
			t.Fatalf("seed %d: worst %+v, want max %d", seed, p, worst)
		}
		// the trailing series never exceeds, and reaches, the worst max in W
		var top int64
		for _, pt := range tr.Trailing(0) {
			top = max(top, pt.Accepted)
		}
		if top != worst {
			t.Fatalf("seed %d: trailing peak %d, want %d", seed, top, worst)
		}
	}
}

func TestKeyTrackerStarved(t *testing.T) {
	w := 10 * time.Millisecond
	for _, tc := range []struct {
		name        string
		allowed     []bool
		starved     int64
		starvedKeys int64
	}{
		{"refuses everything", []bool{false, false, false}, 2, 1},
		{"allows everything", []bool{true, true, true}, 0, 0},
		{"refuses only the third", []bool{true, true, false}, 0, 0},
		{"refuses the first", []bool{false, true, true}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewKeyTracker(2, w) // the exact log accepts the first two
			for i, a := range tc.allowed {
				tr.Add("k", time.Duration(i)*time.Millisecond, 1, a)
			}
			p, _ := tr.Summary()
			if p.Starved != tc.starved || p.StarvedKeys != tc.starvedKeys {
				t.Fatalf("starved %d keys %d, want %d %d", p.Starved, p.StarvedKeys, tc.starved, tc.starvedKeys)
			}
			if tc.starved > 0 && (len(p.MostStarved) != 1 || p.MostStarved[0].Key != "k") {
				t.Fatalf("most starved %+v", p.MostStarved)
			}
		})
	}
}

func TestKeyTrackerMostStarvedOrderAndCap(t *testing.T) {
	tr := NewKeyTracker(100, time.Second)
	for k := range 8 {
		for range k + 1 {
			tr.Add(fmt.Sprintf("k%d", k), 0, 1, false)
		}
	}
	p, _ := tr.Summary()
	if len(p.MostStarved) != TopKeys {
		t.Fatalf("%d keys listed, want %d", len(p.MostStarved), TopKeys)
	}
	for i, c := range p.MostStarved {
		if want := fmt.Sprintf("k%d", 7-i); c.Key != want || c.Starved != int64(8-i) {
			t.Fatalf("rank %d: %+v, want %s", i, c, want)
		}
	}
}

func TestTrailingBoundedAndKeepsPeak(t *testing.T) {
	tr := NewKeyTracker(10, time.Second)
	for i := range 100_000 {
		tr.Add("k", time.Duration(i)*100*time.Millisecond, 1, true)
	}
	pts := tr.Trailing(0)
	if len(pts) == 0 || len(pts) > MaxTrailingPoints {
		t.Fatalf("%d points", len(pts))
	}
	for _, p := range pts {
		if p.Accepted != 10 && p.TMS > 1000 {
			t.Fatalf("point %+v: a steady 10/s stream holds 10 per window", p)
		}
	}
}
