package verify

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// bruteMax is the set starting at each decision i holding every later one
// before lo_i + w, the worst (first on a tie): the definition.
func bruteMax(acc []timed, w time.Duration) (best int64, set []timed) {
	for i := range acc {
		var sum int64
		var s []timed
		for k := i; k < len(acc) && acc[k].lo < acc[i].lo+w; k++ {
			sum += acc[k].cost
			s = append(s, acc[k])
		}
		if sum > best {
			best, set = sum, s
		}
	}
	return best, set
}

// The streamed trailing window finds the definition's worst set, on
// random decisions (bursts at one instant, gaps, costs), however long the
// stream (compaction copies the worst window out before dropping it).
func TestTrailingWindowMatchesDefinition(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 400 {
		w := time.Duration(1+r.IntN(50)) * time.Microsecond
		var acc []timed
		at := time.Duration(r.IntN(10)) - 5
		for k := range 1 + r.IntN(2000) {
			if r.IntN(3) > 0 {
				at += time.Duration(r.IntN(int(w) * 2 / max(1, 1+r.IntN(8))))
			}
			acc = append(acc, timed{lo: at, hi: at, cost: 1 + int64(r.IntN(3)), seq: k})
		}
		want, wantSet := bruteMax(acc, w)
		got, lo, hi, set := maxConservative(acc, w)
		if got != want || !slices.Equal(set, wantSet) || lo != set[0].lo || hi != set[len(set)-1].lo {
			t.Fatalf("case %d (w %s, %d decisions): got %d over %d decisions [%s, %s], want %d over %d", n, w, len(acc), got, len(set), lo, hi, want, len(wantSet))
		}
	}
	if best, _, _, set := newTrailingWindow(time.Second).worst(); best != 0 || set != nil {
		t.Errorf("empty: %d %v", best, set)
	}
}
