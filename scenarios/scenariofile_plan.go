package scenarios

import "time"

// plan is a scenario file evaluated for one Params: every scalar known, so
// generating arrivals cannot fail.
type plan struct {
	p        Params
	patterns []patternPlan
	total    int64
}

type patternPlan struct {
	kind                string
	key                 string
	client, clients     int64
	start, step, jitter time.Duration
	count, cost         int64
	period              time.Duration
	periods             int64
	span                time.Duration
	every               time.Duration
	runs                int64
	offsets             []time.Duration // cron: per client
	requests            []requestPlan
}

type requestPlan struct {
	offset, step time.Duration
	count, cost  int64
}

// evalAs evaluates fl as the wanted kind; a missing field gives def.
func evalAs(fl *field, env map[string]any, want kind, def int64) (int64, error) {
	if fl == nil || fl.prog == nil {
		return def, nil
	}
	_, v, err := runExpr(fl.prog, env)
	if err != nil {
		return 0, fileErr(fl.path, fl.line, "%v", err)
	}
	if v.k != want && !(want == duration && v.n == 0) {
		return 0, fileErr(fl.path, fl.line, "want a %s, got the %s %s", want, v.k, v)
	}
	return v.n, nil
}

// atLeast checks v >= lo for the field fl (or, when fl is nil, the pattern).
func atLeast(fl *field, pt *pattern, v, lo int64) error {
	if v >= lo {
		return nil
	}
	path, line := pt.path, pt.line
	if fl != nil {
		path, line = fl.path, fl.line
	}
	return fileErr(path, line, "must be >= %d, got %d", lo, v)
}

// plan evaluates every field for p (Limit and Window already defaulted).
func (f *scenarioFile) plan(p Params) (*plan, error) {
	env := map[string]any{"L": p.Limit, "W": p.Window}
	for _, v := range f.vars {
		x, _, err := runExpr(v.prog, env)
		if err != nil {
			return nil, fileErr(v.path, v.line, "%v", err)
		}
		env[v.name] = x
	}
	pl := &plan{p: p}
	for _, pt := range f.patterns {
		pp := patternPlan{kind: pt.kind, key: pt.key}
		var err error
		get := func(name string, want kind, def int64) int64 {
			if err != nil {
				return 0
			}
			var v int64
			v, err = evalAs(pt.fields[name], env, want, def)
			return v
		}
		check := func(name string, v, lo int64) {
			if err == nil {
				err = atLeast(pt.fields[name], pt, v, lo)
			}
		}
		pp.client = get("client", number, 0)
		check("client", pp.client, 0)
		pp.clients = get("clients", number, 1)
		check("clients", pp.clients, 1)
		pp.cost = get("cost", number, 1)
		check("cost", pp.cost, 1)
		if err == nil && pp.cost > p.Limit {
			err = fileErr(pt.fields["cost"].path, pt.fields["cost"].line, "cost %d is above the limit %d", pp.cost, p.Limit)
		}
		pp.jitter = time.Duration(get("jitter", duration, 0))
		check("jitter", int64(pp.jitter), 0)
		var perClient int64
		switch pt.kind {
		case "burst":
			pp.start = time.Duration(get("at", duration, 0))
			pp.count = get("count", number, 0)
			check("count", pp.count, 1)
			pp.step = time.Duration(get("step", duration, 0))
			perClient = pp.count
		case "steady":
			pp.start = time.Duration(get("start", duration, 0))
			pp.count = get("count", number, 0)
			check("count", pp.count, 1)
			pp.period = time.Duration(get("period", duration, int64(p.Window)))
			check("period", int64(pp.period), 1)
			pp.periods = get("periods", number, 1)
			check("periods", pp.periods, 1)
			if err == nil {
				pp.step = time.Duration(get("step", duration, int64(pp.period)/pp.count))
			}
			perClient = pp.periods * pp.count
			if err == nil && pp.count > MaxFileArrivals {
				perClient = MaxFileArrivals + 1
			}
		case "random":
			pp.start = time.Duration(get("start", duration, 0))
			pp.span = time.Duration(get("span", duration, 0))
			check("span", int64(pp.span), 1)
			pp.count = get("count", number, 0)
			check("count", pp.count, 1)
			perClient = pp.count
		case "cron":
			pp.start = time.Duration(get("start", duration, 0))
			pp.every = time.Duration(get("every", duration, 0))
			check("every", int64(pp.every), 1)
			pp.runs = get("runs", number, 0)
			check("runs", pp.runs, 1)
			if err == nil && pp.clients > MaxFileArrivals {
				err = fileErr(pt.fields["clients"].path, pt.fields["clients"].line, "clients %d: more than %d", pp.clients, MaxFileArrivals)
			}
			for c := int64(0); err == nil && c < pp.clients; c++ {
				env["client"] = c
				pp.offsets = append(pp.offsets, time.Duration(get("client_offset", duration, 0)))
			}
			delete(env, "client")
			var perRun int64
			for _, rq := range pt.requests {
				if err != nil {
					break
				}
				var r requestPlan
				if r.count, err = evalAs(rq["count"], env, number, 1); err == nil {
					err = atLeastReq(rq, "count", r.count, 1)
				}
				if err == nil {
					if r.cost, err = evalAs(rq["cost"], env, number, 1); err == nil {
						err = atLeastReq(rq, "cost", r.cost, 1)
					}
				}
				if err == nil && r.cost > p.Limit {
					fl := rq["cost"]
					err = fileErr(fl.path, fl.line, "cost %d is above the limit %d", r.cost, p.Limit)
				}
				var o, s int64
				if err == nil {
					o, err = evalAs(rq["offset"], env, duration, 0)
				}
				if err == nil {
					s, err = evalAs(rq["step"], env, duration, 0)
				}
				r.offset, r.step = time.Duration(o), time.Duration(s)
				pp.requests = append(pp.requests, r)
				perRun = min(perRun+r.count, MaxFileArrivals+1)
			}
			if err == nil {
				perClient = mulCap(pp.runs, perRun)
			}
		}
		if err != nil {
			return nil, err
		}
		pl.total += mulCap(pp.clients, perClient)
		if pl.total > MaxFileArrivals {
			return nil, fileErr(pt.path, pt.line, "the scenario would make more than %d arrivals", MaxFileArrivals)
		}
		pl.patterns = append(pl.patterns, pp)
	}
	return pl, nil
}

// atLeastReq checks a cron request's field.
func atLeastReq(rq map[string]*field, name string, v, lo int64) error {
	if v >= lo {
		return nil
	}
	fl := rq[name]
	if fl == nil {
		fl = rq[""]
	}
	return fileErr(fl.path, fl.line, "must be >= %d, got %d", lo, v)
}

// mulCap multiplies two non-negative counts, capping at MaxFileArrivals+1.
func mulCap(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > (MaxFileArrivals+1)/b {
		return MaxFileArrivals + 1
	}
	return a * b
}

// build evaluates the file for p and makes the Schedule.
func (f *scenarioFile) build(p Params) (Schedule, error) {
	p = withDefaults(p, f.defaults)
	pl, err := f.plan(p)
	if err != nil {
		return Schedule{}, err
	}
	rng := newRand(p.Seed + f.seed)
	arr := make([]Arrival, 0, pl.total)
	jit := func(j time.Duration) time.Duration {
		if j > 0 {
			return time.Duration(rng.Int64N(int64(j)))
		}
		return 0
	}
	for _, pp := range pl.patterns {
		switch pp.kind {
		case "burst":
			for c := int64(0); c < pp.clients; c++ {
				for i := int64(0); i < pp.count; i++ {
					at := pp.start + time.Duration(i)*pp.step + jit(pp.jitter)
					arr = append(arr, Arrival{At: at, Key: pp.key, Cost: pp.cost, Client: int(pp.client + c)})
				}
			}
		case "steady":
			for c := int64(0); c < pp.clients; c++ {
				for w := int64(0); w < pp.periods; w++ {
					for k := int64(0); k < pp.count; k++ {
						at := pp.start + time.Duration(w)*pp.period + time.Duration(k)*pp.step + jit(pp.jitter)
						arr = append(arr, Arrival{At: at, Key: pp.key, Cost: pp.cost, Client: int(pp.client + c)})
					}
				}
			}
		case "random":
			for c := int64(0); c < pp.clients; c++ {
				for i := int64(0); i < pp.count; i++ {
					at := pp.start + time.Duration(rng.Int64N(int64(pp.span)))
					arr = append(arr, Arrival{At: at, Key: pp.key, Cost: pp.cost, Client: int(pp.client + c)})
				}
			}
		case "cron":
			for k := int64(0); k < pp.runs; k++ {
				for c := int64(0); c < pp.clients; c++ {
					base := pp.start + time.Duration(k)*pp.every + pp.offsets[c]
					for _, r := range pp.requests {
						for i := int64(0); i < r.count; i++ {
							at := base + r.offset + time.Duration(i)*r.step
							arr = append(arr, Arrival{At: at, Key: pp.key, Cost: r.cost, Client: int(pp.client + c)})
						}
					}
				}
			}
		}
	}
	return finish(f.name, p, arr), nil
}
