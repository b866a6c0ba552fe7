package scenarios

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
)

// GenOptions shape a synthetic access log (GenerateAccessLog). The zero
// value gives the default log: 10^6 lines over 24 h from 10^4 clients.
type GenOptions struct {
	// Lines is the number of lines; zero means 1_000_000.
	Lines int
	// Keys is the number of distinct client addresses; zero means 10_000.
	// It must exceed HeavyKeys + CronKeys.
	Keys int
	// HeavyKeys is the number of heavy clients (203.0.113.x) that send
	// HeavyShare of all lines between them; zero means 5.
	HeavyKeys int
	// HeavyShare is the heavy clients' share of the lines, in [0, 1); zero
	// means 0.2.
	HeavyShare float64
	// CronKeys is the number of cron clients (198.51.100.x / 198.51.101.x)
	// that burst in the first second of every round minute; zero means 50.
	CronKeys int
	// CronShare is the share of the lines sent in those bursts, in [0, 1);
	// zero means 0.1.
	CronShare float64
	// Start is the first minute's start; the zero value means
	// 2024-01-01T00:00:00Z. Times are written in Start's location.
	Start time.Time
	// Duration is the span of the log, rounded down to whole minutes (at
	// least one); zero means 24h.
	Duration time.Duration
	// Disorder, when > 0, writes each line up to Disorder late (a uniform
	// draw, as nginx logs a request when it ends), so times in the file
	// decrease a little now and then. Zero: the file is sorted.
	Disorder time.Duration
	// Seed seeds every random choice; the same GenOptions write the same bytes.
	Seed int64
}

// GenerateAccessLog writes a synthetic nginx combined access log to w
// (uncompressed; wrap w in a gzip.Writer for a .gz file): o.Lines lines over
// o.Duration, one minute at a time, each minute holding an equal share of
// the lines (the remainder spread over the first minutes). In each minute,
// CronShare of the lines come from the cron clients within its first second,
// the rest at uniform times; a line's client is a heavy one with
// probability HeavyShare, else one of the others uniformly. Memory is one
// minute of lines. Errors: invalid options, or w's write error.
func GenerateAccessLog(w io.Writer, o GenOptions) error {
	if o.Lines == 0 {
		o.Lines = 1_000_000
	}
	if o.Keys == 0 {
		o.Keys = 10_000
	}
	if o.HeavyKeys == 0 {
		o.HeavyKeys = 5
	}
	if o.HeavyShare == 0 {
		o.HeavyShare = 0.2
	}
	if o.CronKeys == 0 {
		o.CronKeys = 50
	}
	if o.CronShare == 0 {
		o.CronShare = 0.1
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if o.Duration == 0 {
		o.Duration = 24 * time.Hour
	}
	switch {
	case o.Lines < 0:
		return fmt.Errorf("lines: must be >= 0, got %d", o.Lines)
	case o.HeavyKeys < 0 || o.HeavyKeys > 250:
		return fmt.Errorf("heavy keys: must be in [0, 250], got %d", o.HeavyKeys)
	case o.CronKeys < 0 || o.CronKeys > 500:
		return fmt.Errorf("cron keys: must be in [0, 500], got %d", o.CronKeys)
	case o.Keys <= o.HeavyKeys+o.CronKeys || o.Keys-o.HeavyKeys-o.CronKeys > 1<<24:
		return fmt.Errorf("keys: must be more than heavy + cron keys (%d) and at most 2^24 more, got %d", o.HeavyKeys+o.CronKeys, o.Keys)
	case o.HeavyShare < 0 || o.HeavyShare >= 1 || o.CronShare < 0 || o.CronShare >= 1:
		return fmt.Errorf("heavy share %g and cron share %g: must be in [0, 1)", o.HeavyShare, o.CronShare)
	case o.Duration < 0 || o.Disorder < 0:
		return fmt.Errorf("duration %s and disorder %s: must be >= 0", o.Duration, o.Disorder)
	}
	minutes := max(1, int(o.Duration/time.Minute))
	rng := newRand(o.Seed)
	bw := bufio.NewWriterSize(w, 64<<10)
	others := o.Keys - o.HeavyKeys - o.CronKeys
	type line struct {
		at    time.Duration // request start, from the minute's start
		delay time.Duration // written this late (Disorder)
		key   int           // 0..Keys-1: heavy, then cron, then others
	}
	var minute []line
	var buf []byte
	for m := 0; m < minutes; m++ {
		n := o.Lines / minutes
		if m < o.Lines%minutes {
			n++
		}
		minute = minute[:0]
		for i := 0; i < n; i++ {
			var l line
			switch u := rng.Float64(); {
			case u < o.CronShare && o.CronKeys > 0:
				l = line{at: time.Duration(rng.Int64N(int64(time.Second))), key: o.HeavyKeys + rng.IntN(o.CronKeys)}
			case u < o.CronShare+(1-o.CronShare)*o.HeavyShare && o.HeavyKeys > 0:
				l = line{at: time.Duration(rng.Int64N(int64(time.Minute))), key: rng.IntN(o.HeavyKeys)}
			default:
				l = line{at: time.Duration(rng.Int64N(int64(time.Minute))), key: o.HeavyKeys + o.CronKeys + rng.IntN(others)}
			}
			if o.Disorder > 0 {
				l.delay = time.Duration(rng.Int64N(int64(o.Disorder)))
			}
			minute = append(minute, l)
		}
		slices.SortStableFunc(minute, func(a, b line) int { return int(a.at - b.at) })
		base := o.Start.Add(time.Duration(m) * time.Minute)
		for _, l := range minute {
			buf = appendAccessLine(buf[:0], o, l.key, base.Add(l.at+l.delay), rng.Uint64())
			if _, err := bw.Write(buf); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

var (
	genPaths  = []string{"/api/v1/search", "/api/v1/videos", "/api/v1/users/", "/static/app.js", "/", "/login"}
	genAgents = []string{
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36",
		"curl/8.5.0",
		"python-requests/2.31.0",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 \\\"quoted\\\" Mobile",
	}
	genStatus = []string{"200", "200", "200", "200", "200", "200", "304", "404", "429", "500"}
)

// appendAccessLine appends one combined-format line for client key at t; r
// supplies the request's details.
func appendAccessLine(b []byte, o GenOptions, key int, t time.Time, r uint64) []byte {
	switch {
	case key < o.HeavyKeys:
		b = append(b, "203.0.113."...)
		b = strconv.AppendInt(b, int64(key+1), 10)
	case key < o.HeavyKeys+o.CronKeys:
		c := key - o.HeavyKeys
		b = append(b, "198.51."...)
		b = strconv.AppendInt(b, int64(100+c/250), 10)
		b = append(b, '.')
		b = strconv.AppendInt(b, int64(c%250+1), 10)
	default:
		c := key - o.HeavyKeys - o.CronKeys
		b = append(b, "10."...)
		b = strconv.AppendInt(b, int64(c>>16), 10)
		b = append(b, '.')
		b = strconv.AppendInt(b, int64(c>>8&255), 10)
		b = append(b, '.')
		b = strconv.AppendInt(b, int64(c&255), 10)
	}
	b = append(b, " - "...)
	if r&7 == 0 {
		b = append(b, "user"...)
		b = strconv.AppendInt(b, int64(key), 10)
	} else {
		b = append(b, '-')
	}
	b = append(b, " ["...)
	b = t.AppendFormat(b, accessTimeLayout)
	b = append(b, "] \"GET "...)
	p := genPaths[(r>>3)%uint64(len(genPaths))]
	b = append(b, p...)
	if p[len(p)-1] == '/' && p != "/" {
		b = strconv.AppendUint(b, (r>>8)%1000, 10)
	}
	b = append(b, "?page="...)
	b = strconv.AppendUint(b, (r>>18)%10, 10)
	b = append(b, " HTTP/1.1\" "...)
	b = append(b, genStatus[(r>>22)%uint64(len(genStatus))]...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, 100+(r>>26)%50000, 10)
	b = append(b, " \"-\" \""...)
	b = append(b, genAgents[(r>>42)%uint64(len(genAgents))]...)
	b = append(b, "\"\n"...)
	return b
}
