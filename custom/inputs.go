package custom

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"unicode"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/vclock"
)

// Read is one element of KEYS or ARGV a script reads (vclock.Input), with
// its line's code and the template its name suggests.
type Read struct {
	vclock.Input
	// Code is the line of the first read, trimmed (at most 72 bytes, "..."
	// marking a cut).
	Code string
	// Suggest is the template the names on that line suggest ("{limit}",
	// "{window_s}", "{now_ms}"; SuggestTemplate), "" when they suggest
	// none. A guess from names: the units are the script's to say.
	Suggest string
}

// InputsError is the error of a script's first call when the script
// reads KEYS or ARGV elements the call did not fill, or its reply could
// not be judged (Err then wraps ErrReplyShape): the script's reads, found
// by a static read of its source, beside the templates given, so that a
// user is told what the script needs rather than only Redis's message
// ("arguments must be strings or integers"). ScriptLimiter.Explain
// returns it inside a *field.Error naming "args" (an ARGV element
// unfilled), "keys" (a KEYS element) or "allowed" (a reply the predicate
// cannot judge, every read filled).
type InputsError struct {
	// Name is the script's name.
	Name string
	// Reads are all the script's reads of KEYS and ARGV, KEYS first;
	// Missing those no template fills (an element past the templates
	// given, or a computed read of a table given none).
	Reads, Missing []Read
	// Keys and Args are the KEYS and ARGV templates given, as written
	// (Keys empty: the one key {key}).
	Keys, Args []string
	// Err is the call's error.
	Err error
}

// Error is Need, then the call's error: "mine.lua reads ARGV[1] (line 3)
// and ARGV[2] (line 4), which no argument template fills: <err>".
func (e *InputsError) Error() string { return e.Need() + ": " + e.Cause() }

// Cause is the call's error without the script's name before it.
func (e *InputsError) Cause() string {
	return strings.TrimPrefix(e.Err.Error(), e.Name+": ")
}

// Need says what the script needs: "mine.lua reads ARGV[1] (line 3) and
// ARGV[2] (line 4), which no argument template fills", or "shape.lua:
// its reply cannot be judged" when nothing is missing.
func (e *InputsError) Need() string {
	if len(e.Missing) == 0 {
		return e.Name + ": its reply cannot be judged"
	}
	parts := make([]string, len(e.Missing))
	for i, r := range e.Missing {
		parts[i] = fmt.Sprintf("%s (line %d)", r.Input, r.Line)
	}
	what := "argument template"
	given := len(e.Args)
	if e.Missing[0].Table == "KEYS" {
		what, given = "key template", max(len(e.Keys), 1)
	}
	return fmt.Sprintf("%s reads %s, which %s", e.Name, joinAnd(parts), unfilled(what, given))
}

// unfilled says how many templates of what were given, before "them":
// "no argument template fills", "the 1 key template given does not reach".
func unfilled(what string, n int) string {
	if n == 0 {
		return "no " + what + " fills"
	}
	if n == 1 {
		return "the 1 " + what + " given does not reach"
	}
	return fmt.Sprintf("the %d %ss given do not reach", n, what)
}

// Unwrap returns Err.
func (e *InputsError) Unwrap() error { return e.Err }

// joinAnd joins "a", "a and b", "a, b and c".
func joinAnd(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// Explain returns err, the error of a call of s, with what the script
// needs when that is the likeliest cause: when the script reads KEYS or
// ARGV elements s's templates do not fill and the call failed in the
// script (a Redis error reply or a *ScriptError), a *field.Error naming
// "keys" or "args" wrapping an *InputsError; when every read is filled
// and the reply could not be judged (ErrReplyShape), one naming
// "allowed". Any other err (nil, a timeout, Redis unreachable, a script
// that cannot be read statically) is returned as it is.
func (s *ScriptLimiter) Explain(err error) error {
	var re redis.Error
	if !errors.As(err, &re) && !errors.As(err, new(*ScriptError)) || aside(err) {
		return err
	}
	return s.explain(err)
}

// aside reports whether err is no error of a script's: nil, a cancelled
// or timed-out call, a network error.
func aside(err error) bool {
	return err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.As(err, new(net.Error))
}

// explain is Explain of err, an error of the script's own.
func (s *ScriptLimiter) explain(err error) error {
	ins, lerr := vclock.FindInputs(s.src)
	if lerr != nil {
		return err
	}
	e := &InputsError{Name: s.name, Err: err}
	for _, k := range s.keys {
		e.Keys = append(e.Keys, k.src)
	}
	for _, a := range s.args {
		e.Args = append(e.Args, a.src)
	}
	lines := strings.Split(s.src, "\n")
	for _, in := range ins {
		r := Read{Input: in}
		if in.Line-1 < len(lines) {
			r.Code = trimCode(lines[in.Line-1])
			r.Suggest = SuggestTemplate(r.Code, in.Table)
		}
		e.Reads = append(e.Reads, r)
		n := len(s.args)
		if in.Table == "KEYS" {
			n = len(s.keys)
		}
		if in.Index > n || in.Index == 0 && n == 0 {
			e.Missing = append(e.Missing, r)
		}
	}
	switch {
	case len(e.Missing) > 0 && e.Missing[0].Table == "KEYS":
		return &field.Error{Name: "keys", Err: e}
	case len(e.Missing) > 0:
		return &field.Error{Name: "args", Err: e}
	case errors.Is(err, ErrReplyShape):
		return &field.Error{Name: "allowed", Err: e}
	}
	return err
}

// trimCode is line without its surrounding space, cut to 72 bytes.
func trimCode(line string) string {
	line = strings.TrimSpace(line)
	if len(line) > 72 {
		line = line[:69] + "..."
	}
	return line
}

// suggestions map the words of a Lua name to the template they suggest,
// in order: the first rule with a word in the name wins.
var suggestions = []struct {
	words    []string
	template string
}{
	{[]string{"now", "time", "timestamp", "ts", "clock"}, "{now_ms}"},
	{[]string{"id", "uuid", "member", "nonce", "unique", "reqid"}, "{request_id}"},
	{[]string{"cost", "weight", "requested", "amount"}, "{cost}"},
	{[]string{"window", "win", "period", "interval", "ttl", "expire", "expiry", "duration", "seconds", "secs", "sec"}, "{window_s}"},
	{[]string{"limit", "max", "capacity", "quota", "rate", "allowed", "burst", "threshold"}, "{limit}"},
}

// SuggestTemplate is the template the names in code suggest for a read of
// table ("ARGV" or "KEYS"), or "" when they suggest none: for ARGV, the
// name assigned on the line ("local window_ms = tonumber(ARGV[2])"), else
// every name on it, read as words (window_ms, windowMs: "window", "ms");
// a window or a time in milliseconds or microseconds ("ms", "us" among the
// words) gets that unit. KEYS suggest "{key}". A guess from names, for an
// example: it never runs unchecked.
func SuggestTemplate(code, table string) string {
	if table == "KEYS" {
		return "{key}"
	}
	words := nameWords(code)
	if lhs, _, ok := strings.Cut(code, "="); ok && !strings.ContainsAny(lhs, "()[") {
		if w := nameWords(strings.TrimPrefix(strings.TrimSpace(lhs), "local ")); len(w) > 0 {
			words = w
		}
	}
	has := func(ws ...string) bool {
		for _, w := range words {
			for _, x := range ws {
				if w == x {
					return true
				}
			}
		}
		return false
	}
	for _, s := range suggestions {
		if !has(s.words...) {
			continue
		}
		switch {
		case s.template == "{now_ms}" && has("us", "micros", "microseconds"):
			return "{now_us}"
		case s.template == "{now_ms}" && has("s", "sec", "secs", "seconds"):
			return "{now_s}"
		case s.template == "{window_s}" && has("ms", "millis", "milliseconds"):
			return "{window_ms}"
		case s.template == "{window_s}" && has("us", "micros", "microseconds"):
			return "{window_us}"
		}
		return s.template
	}
	return ""
}

// nameWords splits the Lua names of code into lower-case words, at
// underscores and at lower-to-upper case changes (windowMs: "window",
// "ms"), leaving out Lua's keywords and the script's tables.
func nameWords(code string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			w := strings.ToLower(string(cur))
			switch w {
			case "local", "tonumber", "tostring", "argv", "keys", "redis", "call", "pcall", "and", "or", "not", "if", "then", "end", "return":
			default:
				words = append(words, w)
			}
			cur = cur[:0]
		}
	}
	prev := rune(0)
	for _, r := range code {
		switch {
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			cur = append(cur, r)
		case unicode.IsLetter(r):
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return words
}
