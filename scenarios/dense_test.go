package scenarios

import (
	"reflect"
	"sort"
	"testing"
	"time"
)

func TestDenseStream(t *testing.T) {
	ms, us := time.Millisecond, time.Microsecond
	cases := []struct {
		name     string
		p        Params
		step     time.Duration
		wantStep time.Duration
		wantN    int
	}{
		// W/(4L) = 50 ms; 1 ms is finer but gives 30000 > cap 11000: coarsened
		// to ceil(30 s / 11000) = 2727.28 µs, rounded up to 2728 µs
		{"defaults (50 per 10s)", Params{}, 0, 2728 * us, 10998},
		{"W/(4L) finer than 1 ms", Params{Limit: 100, Window: 100 * ms}, 0, 250 * us, 1200},
		{"1 ms finer than W/(4L)", Params{Limit: 2, Window: 1000 * ms}, 0, ms, 3000},
		{"W/(4L) below 1 µs: 1 µs", Params{Limit: 1000, Window: ms}, 0, us, 3000},
		{"a given step", Params{Limit: 10, Window: time.Second}, 10 * ms, 10 * ms, 300},
		{"a given step rounded up to the µs", Params{Limit: 10, Window: time.Second}, 10*ms + 1, 10*ms + us, 300},
		// cap 10200: ceil(3 s / 10200) = 294.118 µs, rounded up to 295 µs
		{"a step finer than the cap allows", Params{Limit: 10, Window: time.Second}, us, 295 * us, 10170},
		// cap 210000: ceil(3 h / 210000) = 51428.572 µs, rounded up to 51429 µs
		{"large limit: the cap is 20L+10000", Params{Limit: 10_000, Window: time.Hour}, 0, 51429 * us, 209999},
		{"a step longer than the window", Params{Limit: 3, Window: time.Second}, 2 * time.Second, 2 * time.Second, 2},
	}
	for _, c := range cases {
		p := withDefaults(c.p, shortDefaults)
		if got := denseStep(p, c.step); got != c.wantStep {
			t.Errorf("%s: step %v, want %v", c.name, got, c.wantStep)
		}
		arr := DenseStream(c.p, c.step)
		if len(arr) != c.wantN {
			t.Errorf("%s: %d arrivals, want %d", c.name, len(arr), c.wantN)
		}
		if int64(len(arr)) > DenseCap(p.Limit) {
			t.Errorf("%s: %d arrivals, over the cap %d", c.name, len(arr), DenseCap(p.Limit))
		}
		if !sort.SliceIsSorted(arr, func(i, j int) bool { return arr[i].At < arr[j].At }) {
			t.Errorf("%s: not sorted", c.name)
		}
		W := p.Window
		if first := arr[0].At; first < -W || first >= -W+c.wantStep || first%us != 0 {
			t.Errorf("%s: first arrival at %v, want a whole µs in [-W, -W+step)", c.name, first)
		}
		if last := arr[len(arr)-1].At; last >= 2*W+c.wantStep || last+c.wantStep < 2*W {
			t.Errorf("%s: last arrival at %v, want the last step before 2W+offset", c.name, last)
		}
		for i, a := range arr {
			if a.Key != UserKey || a.Cost != 1 || a.Client != 0 {
				t.Fatalf("%s: arrival %d is %+v, want cost 1 on %q from client 0", c.name, i, a, UserKey)
			}
			if i > 0 && a.At-arr[i-1].At != c.wantStep {
				t.Fatalf("%s: arrivals %d and %d are %v apart, want %v", c.name, i-1, i, a.At-arr[i-1].At, c.wantStep)
			}
		}
	}
}

func TestDenseStreamSeed(t *testing.T) {
	p := Params{Limit: 10, Window: time.Second, Seed: 3}
	if !reflect.DeepEqual(DenseStream(p, 0), DenseStream(p, 0)) {
		t.Error("the same Params gave different streams")
	}
	offsets := map[time.Duration]bool{}
	for seed := range int64(8) {
		p.Seed = seed
		offsets[DenseStream(p, 0)[0].At+p.Window] = true
	}
	if len(offsets) < 2 {
		t.Errorf("8 seeds gave offsets %v: want different sub-step phases", offsets)
	}
}

func TestDenseTrial(t *testing.T) {
	tr := DenseTrial(Params{Limit: 10, Window: time.Second}, 0)
	if tr.Family != DenseFamily || tr.Judge != Safety || tr.RealTime {
		t.Errorf("trial %+v: want a virtual-time Safety trial of %q", tr, DenseFamily)
	}
	if want := DenseStream(Params{Limit: 10, Window: time.Second}, 0); !reflect.DeepEqual(tr.Schedule.Arrivals, want) {
		t.Error("trial schedule differs from DenseStream")
	}
	if tr.Schedule.Params.Limit != 10 || tr.Schedule.Scenario != DenseFamily {
		t.Errorf("schedule %+v", tr.Schedule.Params)
	}
	if tr.Name != "1 request every 1ms for 3 windows (3000 requests)" {
		t.Errorf("name %q", tr.Name)
	}
}

// TestDenseStreamExposesRounding: a sliding log that stamps requests with
// Redis TIME rounded half up to whole seconds (t[1] + (t[2] >= 500000 and 1
// or 0)) forgets requests up to half a second early and admits more than L
// in a trailing window of true time; the dense stream shows it, and a log on
// exact times stays at L.
func TestDenseStreamExposesRounding(t *testing.T) {
	p := Params{Limit: 50, Window: 10 * time.Second}
	arr := DenseStream(p, 0)
	roundHalfUp := func(d time.Duration) time.Duration { // floor(d/1s + 1/2) s, negative d too
		d += time.Second / 2
		f := d.Truncate(time.Second)
		if f > d {
			f -= time.Second
		}
		return f
	}
	exact := func(d time.Duration) time.Duration { return d }
	for _, c := range []struct {
		name  string
		stamp func(time.Duration) time.Duration
		over  bool
	}{{"exact", exact, false}, {"seconds rounded half up", roundHalfUp, true}} {
		var stamps, accepted []time.Duration
		for _, a := range arr {
			now := c.stamp(a.At)
			n := 0
			for _, s := range stamps {
				if s > now-p.Window {
					n++
				}
			}
			if n < int(p.Limit) {
				stamps = append(stamps, now)
				accepted = append(accepted, a.At)
			}
		}
		most := 0
		for i := range accepted {
			j := sort.Search(len(accepted), func(j int) bool { return accepted[j] > accepted[i]-p.Window })
			most = max(most, i-j+1)
		}
		if got := most > int(p.Limit); got != c.over {
			t.Errorf("%s: at most %d accepted in a trailing window of %v; over the limit %v, want %v", c.name, most, p.Window, got, c.over)
		}
	}
}
