package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// This file holds the three line parsers of traffic files and the time
// parsing they share.

// The range of times a record may have: what time.Time.UnixNano can hold.
var (
	minTrafficTime = time.Unix(0, math.MinInt64).Add(time.Hour)
	maxTrafficTime = time.Unix(0, math.MaxInt64).Add(-time.Hour)
)

func checkRange(t time.Time) (time.Time, error) {
	if t.Before(minTrafficTime) || t.After(maxTrafficTime) {
		return time.Time{}, fmt.Errorf("time %s outside the years 1678 to 2262", t.Format(time.RFC3339))
	}
	return t, nil
}

// parseTime reads a CSV or JSON time as unit says (see TimeUnit).
func parseTime(s string, unit TimeUnit) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, errors.New("empty time")
	}
	numeric := s[0] == '-' || s[0] == '+' || isDigit(s[0])
	if numeric && (len(s) < 5 || s[4] != '-') || unit != UnitAuto && unit != UnitRFC3339 {
		if unit == UnitRFC3339 {
			return time.Time{}, fmt.Errorf("bad time %q: want RFC 3339", s)
		}
		t, err := parseUnixTime(s, unit)
		if err != nil {
			return time.Time{}, err
		}
		return checkRange(t)
	}
	if len(s) > 10 && s[10] == ' ' {
		s = s[:10] + "T" + s[11:]
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad time %q: want RFC 3339 or a Unix time", s)
	}
	return checkRange(t)
}

// unitNanos is the length of each numeric unit in nanoseconds.
var unitNanos = map[TimeUnit]int64{UnitSeconds: 1e9, UnitMillis: 1e6, UnitMicros: 1e3, UnitNanos: 1}

// parseUnixTime reads a decimal Unix time ("1700000000", "1700000000.25",
// "-5", "1.7e9") in unit, or by magnitude for UnitAuto.
func parseUnixTime(s string, unit TimeUnit) (time.Time, error) {
	bad := func() (time.Time, error) {
		return time.Time{}, fmt.Errorf("bad time %q: want a Unix time in %s", s, unitName(unit))
	}
	intPart, frac, hasFrac := strings.Cut(s, ".")
	if strings.ContainsAny(s, "eE") {
		// JSON encoders may write big numbers in exponent form; precision
		// below a microsecond may be lost.
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return bad()
		}
		whole := math.Trunc(f)
		if math.Abs(whole) >= 9e18 {
			return bad()
		}
		intPart = strconv.FormatInt(int64(whole), 10)
		frac = strconv.FormatFloat(math.Abs(f-whole), 'f', 9, 64)[2:]
		hasFrac = true
	}
	n, err := strconv.ParseInt(intPart, 10, 64)
	if err != nil {
		return bad()
	}
	neg := strings.HasPrefix(intPart, "-")
	if unit == UnitAuto {
		a := n
		if a < 0 {
			a = -a
		}
		switch {
		case a < 1e11:
			unit = UnitSeconds
		case a < 1e14:
			unit = UnitMillis
		case a < 1e17:
			unit = UnitMicros
		default:
			unit = UnitNanos
		}
	}
	per := unitNanos[unit]
	if n > math.MaxInt64/per || n < math.MinInt64/per {
		return time.Time{}, fmt.Errorf("time %q: out of range in %s", s, unitName(unit))
	}
	ns := n * per
	if hasFrac {
		if frac == "" || strings.Trim(frac, "0123456789") != "" || per == 1 {
			return bad()
		}
		// the fraction of one unit, in ns, digits beyond 1 ns dropped
		var f int64
		scale := per
		for i := 0; i < len(frac) && scale > 1; i++ {
			scale /= 10
			f += int64(frac[i]-'0') * scale
		}
		if neg {
			ns -= f
		} else {
			ns += f
		}
	}
	return time.Unix(0, ns).UTC(), nil
}

func unitName(u TimeUnit) string {
	switch u {
	case UnitSeconds:
		return "seconds"
	case UnitMillis:
		return "milliseconds"
	case UnitMicros:
		return "microseconds"
	case UnitNanos:
		return "nanoseconds"
	}
	return "seconds, ms, µs or ns (by magnitude)"
}

// parseCost reads a cost: empty means 1, else an integer >= 1.
func parseCost(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 1, nil
	}
	c, err := strconv.ParseInt(s, 10, 64)
	if err != nil || c < 1 {
		return 0, fmt.Errorf("bad cost %q: want an integer >= 1", s)
	}
	return c, nil
}

// ---- CSV ----

// splitCSV splits one CSV line into fields, appending to dst. A quoted
// field may hold commas and doubled quotes; its quotes are removed.
func splitCSV(line []byte, dst []string) ([]string, error) {
	dst = dst[:0]
	for i := 0; ; {
		if i < len(line) && line[i] == '"' {
			var b strings.Builder
			j := i + 1
			for {
				k := bytes.IndexByte(line[j:], '"')
				if k < 0 {
					return nil, fmt.Errorf("column %d: quoted field not closed", len(dst)+1)
				}
				b.Write(line[j : j+k])
				j += k + 1
				if j < len(line) && line[j] == '"' {
					b.WriteByte('"')
					j++
					continue
				}
				break
			}
			dst = append(dst, b.String())
			if j == len(line) {
				return dst, nil
			}
			if line[j] != ',' {
				return nil, fmt.Errorf("column %d: text after a closing quote", len(dst))
			}
			i = j + 1
			continue
		}
		k := bytes.IndexByte(line[i:], ',')
		if k < 0 {
			dst = append(dst, string(line[i:]))
			return dst, nil
		}
		dst = append(dst, string(line[i:i+k]))
		i += k + 1
	}
}

func (t *TrafficReader) initCSV() error {
	var header []byte
	for {
		line, err := t.readLine()
		if errors.Is(err, io.EOF) {
			return ErrEmptyTraffic
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			header = bytes.TrimPrefix(line, []byte("\ufeff")) // a byte order mark
			break
		}
	}
	cols, err := splitCSV(header, nil)
	if err != nil {
		return fmt.Errorf("csv header (line %d): %w", t.stats.Lines, err)
	}
	for i := range cols {
		cols[i] = strings.TrimSpace(cols[i])
	}
	find := func(name string) int {
		for i, c := range cols {
			if c == name {
				return i
			}
		}
		return -1
	}
	timeName, keyName, costName := orDefault(t.o.TimeField, "timestamp"), orDefault(t.o.KeyField, "key"), orDefault(t.o.CostField, "cost")
	if c := timeColumn(cols); t.o.TimeField == "" && c != "" {
		timeName = c // the one time-like column (traffic_open.go)
	}
	ti, ki, ci := find(timeName), find(keyName), find(costName)
	for _, c := range []struct {
		field, name string
		i           int
	}{{"time", timeName, ti}, {"key", keyName, ki}} {
		if c.i < 0 {
			return fmt.Errorf("csv header (line %d) has no %s column %q (columns: %s)", t.stats.Lines, c.field, c.name, fieldNames(cols))
		}
	}
	if ci < 0 && t.o.CostField != "" {
		return fmt.Errorf("csv header (line %d) has no cost column %q (columns: %s)", t.stats.Lines, costName, fieldNames(cols))
	}
	unit := t.o.TimeUnit
	var fields []string
	t.parse = func(line []byte) (TrafficRecord, error) {
		var err error
		if fields, err = splitCSV(line, fields); err != nil {
			return TrafficRecord{}, err
		}
		if len(fields) != len(cols) {
			return TrafficRecord{}, fmt.Errorf("%d columns, the header has %d", len(fields), len(cols))
		}
		return makeRecord(fields[ti], fields[ki], costAt(fields, ci), unit)
	}
	return nil
}

func costAt(fields []string, i int) string {
	if i < 0 {
		return ""
	}
	return fields[i]
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// makeRecord checks and converts the three text fields of a CSV or JSON record.
func makeRecord(ts, key, cost string, unit TimeUnit) (TrafficRecord, error) {
	tm, err := parseTime(ts, unit)
	if err != nil {
		return TrafficRecord{}, err
	}
	if key == "" {
		return TrafficRecord{}, errors.New("empty key")
	}
	c, err := parseCost(cost)
	if err != nil {
		return TrafficRecord{}, err
	}
	return TrafficRecord{Time: tm, Key: key, Cost: c}, nil
}

// ---- JSON Lines ----

func (t *TrafficReader) initJSONL() error {
	timeName, keyName, costName := orDefault(t.o.TimeField, "timestamp"), orDefault(t.o.KeyField, "key"), orDefault(t.o.CostField, "cost")
	unit := t.o.TimeUnit
	t.parse = func(line []byte) (TrafficRecord, error) {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil {
			return TrafficRecord{}, fmt.Errorf("bad JSON object: %v", err)
		}
		name := timeName
		if _, has := obj[name]; !has && t.o.TimeField == "" {
			names := make([]string, 0, len(obj))
			for k := range obj {
				names = append(names, k)
			}
			name = orDefault(timeColumn(names), timeName) // the one time-like field (traffic_open.go)
		}
		ts, ok, err := jsonField(obj, name, true)
		if err != nil {
			return TrafficRecord{}, err
		}
		if !ok {
			return TrafficRecord{}, fmt.Errorf("no time field %q", timeName)
		}
		key, ok, err := jsonField(obj, keyName, false)
		if err != nil {
			return TrafficRecord{}, err
		}
		if !ok {
			return TrafficRecord{}, fmt.Errorf("no key field %q", keyName)
		}
		cost, _, err := jsonField(obj, costName, true)
		if err != nil {
			return TrafficRecord{}, err
		}
		return makeRecord(ts, key, cost, unit)
	}
	return nil
}

// jsonField returns the text of a string, number (or, when !numberOnly,
// bool) field, looking inside objects for a dotted name; ok is false when it
// is missing or null.
func jsonField(obj map[string]json.RawMessage, name string, numberOnly bool) (string, bool, error) {
	raw, ok := obj[name]
	for rest := name; !ok; {
		head, tail, dotted := strings.Cut(rest, ".")
		if !dotted {
			return "", false, nil
		}
		inner, found := obj[head]
		if !found {
			return "", false, nil
		}
		obj = nil
		if err := json.Unmarshal(inner, &obj); err != nil || obj == nil {
			return "", false, nil
		}
		rest = tail
		raw, ok = obj[rest]
	}
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "", false, nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", false, fmt.Errorf("field %q: %v", name, err)
		}
		return s, true, nil
	case raw[0] == '-' || isDigit(raw[0]):
		return string(raw), true, nil
	case !numberOnly && (string(raw) == "true" || string(raw) == "false"):
		return string(raw), true, nil
	}
	return "", false, fmt.Errorf("field %q: want a string or a number, got %.40s", name, raw)
}

// ---- access logs ----

// accessLine is one parsed combined-format line; the byte slices point into
// the line.
type accessLine struct {
	remoteAddr, ident, user []byte
	timeLocal               []byte // inside the brackets
	request                 []byte // inside the quotes, escapes kept
	status, bytesSent       []byte
	referer, userAgent      []byte
	hasReferer, hasAgent    bool
	extras                  [][]byte
}

// accessTimeLayout is the layout of [time_local] / %t.
const accessTimeLayout = "02/Jan/2006:15:04:05 -0700"

// parseAccessLine splits a combined (or common) log line:
//
//	host ident user [time] "request" status bytes ["referer" "user agent" extra...]
//
// A quoted field ends at a quote not escaped by a backslash (Apache writes
// \" inside fields, nginx \x22). It checks the shape only: the time, status
// and bytes are checked by the caller as far as it needs them.
func parseAccessLine(line []byte) (accessLine, error) {
	var a accessLine
	rest := line
	token := func(what string) ([]byte, error) {
		rest = bytes.TrimLeft(rest, " ")
		if len(rest) == 0 {
			return nil, fmt.Errorf("line ends before %s", what)
		}
		i := bytes.IndexByte(rest, ' ')
		if i < 0 {
			i = len(rest)
		}
		tok := rest[:i]
		rest = rest[i:]
		return tok, nil
	}
	quoted := func(what string) ([]byte, error) {
		rest = bytes.TrimLeft(rest, " ")
		if len(rest) == 0 || rest[0] != '"' {
			return nil, fmt.Errorf("want a quoted %s", what)
		}
		for i := 1; i < len(rest); i++ {
			switch rest[i] {
			case '\\':
				i++
			case '"':
				v := rest[1:i]
				rest = rest[i+1:]
				if len(rest) > 0 && rest[0] != ' ' {
					return nil, fmt.Errorf("text right after the quoted %s", what)
				}
				return v, nil
			}
		}
		return nil, fmt.Errorf("quoted %s not closed", what)
	}
	var err error
	if a.remoteAddr, err = token("the client address"); err != nil {
		return a, err
	}
	if a.ident, err = token("the ident field"); err != nil {
		return a, err
	}
	if a.user, err = token("the user field"); err != nil {
		return a, err
	}
	rest = bytes.TrimLeft(rest, " ")
	if len(rest) == 0 || rest[0] != '[' {
		return a, errors.New("want [time] after the user field")
	}
	end := bytes.IndexByte(rest, ']')
	if end < 0 {
		return a, errors.New("[time] not closed")
	}
	a.timeLocal, rest = rest[1:end], rest[end+1:]
	if a.request, err = quoted("request"); err != nil {
		return a, err
	}
	if a.status, err = token("the status"); err != nil {
		return a, err
	}
	if len(a.status) != 3 || !allDigits(a.status) {
		return a, fmt.Errorf("bad status %q", a.status)
	}
	if a.bytesSent, err = token("the bytes sent"); err != nil {
		return a, err
	}
	if !allDigits(a.bytesSent) && string(a.bytesSent) != "-" {
		return a, fmt.Errorf("bad bytes sent %q", a.bytesSent)
	}
	if len(bytes.TrimLeft(rest, " ")) == 0 {
		return a, nil // common log format
	}
	if a.referer, err = quoted("referer"); err != nil {
		return a, err
	}
	a.hasReferer = true
	if a.userAgent, err = quoted("user agent"); err != nil {
		return a, err
	}
	a.hasAgent = true
	for {
		rest = bytes.TrimLeft(rest, " ")
		if len(rest) == 0 {
			return a, nil
		}
		var x []byte
		if rest[0] == '"' {
			x, err = quoted(fmt.Sprintf("extra%d", len(a.extras)+1))
		} else {
			x, err = token("")
		}
		if err != nil {
			return a, err
		}
		a.extras = append(a.extras, x)
	}
}

func allDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// accessKeyFields are the KeyField names of access logs (extraN besides).
var accessKeyFields = []string{"remote_addr", "remote_user", "request", "method", "uri", "path", "status", "http_referer", "http_user_agent"}

// accessKey returns the key field of a.
func accessKey(a *accessLine, field string, extra int) ([]byte, error) {
	switch field {
	case "remote_addr":
		return a.remoteAddr, nil
	case "remote_user":
		return a.user, nil
	case "request":
		return a.request, nil
	case "status":
		return a.status, nil
	case "http_referer", "http_user_agent":
		if !a.hasReferer {
			return nil, fmt.Errorf("no %s: a common-format line", field)
		}
		if field == "http_referer" {
			return a.referer, nil
		}
		return a.userAgent, nil
	case "method", "uri", "path":
		method, rest, ok := bytes.Cut(a.request, []byte{' '})
		uri, _, _ := bytes.Cut(rest, []byte{' '})
		if !ok || len(method) == 0 || len(uri) == 0 {
			return nil, fmt.Errorf("request %q is not \"METHOD URI PROTOCOL\"", a.request)
		}
		switch field {
		case "method":
			return method, nil
		case "uri":
			return uri, nil
		}
		path, _, _ := bytes.Cut(uri, []byte{'?'})
		return path, nil
	}
	if extra-1 >= len(a.extras) {
		return nil, fmt.Errorf("no extra%d field (the line has %d after the user agent)", extra, len(a.extras))
	}
	return a.extras[extra-1], nil
}

func (t *TrafficReader) initAccessLog() error {
	if t.o.TimeField != "" && t.o.TimeField != "time_local" {
		return fmt.Errorf("time field %q: access logs have only time_local", t.o.TimeField)
	}
	if t.o.CostField != "" && t.o.CostField != "body_bytes_sent" {
		return fmt.Errorf("cost field %q: access logs take \"\" (cost 1) or body_bytes_sent", t.o.CostField)
	}
	keyField := orDefault(t.o.KeyField, "remote_addr")
	extra := 0
	if n, ok := strings.CutPrefix(keyField, "extra"); ok {
		var err error
		if extra, err = strconv.Atoi(n); err != nil || extra < 1 {
			return fmt.Errorf("key field %q: want extraN, N >= 1", keyField)
		}
	} else if !contains(accessKeyFields, keyField) {
		return fmt.Errorf("key field %q: access logs take %s or extraN (N >= 1)", keyField, strings.Join(accessKeyFields, ", "))
	}
	byBytes := t.o.CostField == "body_bytes_sent"
	t.parse = func(line []byte) (TrafficRecord, error) {
		a, err := parseAccessLine(line)
		if err != nil {
			return TrafficRecord{}, err
		}
		tm, err := time.Parse(accessTimeLayout, string(a.timeLocal))
		if err != nil {
			return TrafficRecord{}, fmt.Errorf("bad time [%s]: want [02/Jan/2006:15:04:05 -0700]", a.timeLocal)
		}
		if tm, err = checkRange(tm); err != nil {
			return TrafficRecord{}, err
		}
		key, err := accessKey(&a, keyField, extra)
		if err != nil {
			return TrafficRecord{}, err
		}
		if len(key) == 0 {
			return TrafficRecord{}, fmt.Errorf("empty key %s", keyField)
		}
		cost := int64(1)
		if byBytes {
			if cost, err = parseCost(string(a.bytesSent)); err != nil || string(a.bytesSent) == "-" {
				return TrafficRecord{}, fmt.Errorf("bad cost: body_bytes_sent %q is not >= 1", a.bytesSent)
			}
		}
		return TrafficRecord{Time: tm, Key: string(key), Cost: cost}, nil
	}
	return nil
}
