package custom

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
)

// Any template parses or fails with an error; a parsed one fills without a
// panic, and text without placeholders comes back unchanged. A template that
// the parser before expressions accepted, and in which every "{" followed by
// [a-z_] is a lone placeholder, fills byte for byte as it did then.
func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"{now_us}", "[[{window_s}, {limit}, 1]]", `{"a":{cost}}`, "{nwo_us}", "{", "}{", "{now_s}{now_s}", "x{request_id}y",
		"{floor(now_ms / window_ms)}", "{limit / window_s}", "{key}:{floor(now_ms / window_ms) - 1}", "{now_us * 1000}", `{key + "}"}`,
		"{split(key, \":\")[2]}", "{limit % (cost - cost)}", "{a b}", "{limit", "{ limit }", "{$env.now_ms}", "{key[0:1]}", "{1/0}"} {
		f.Add(s)
	}
	v := Values{Now: time.UnixMicro(1767225600123456), Window: 1500 * time.Millisecond, Limit: 7, Cost: 2, RequestID: "r", Key: "k"}
	f.Fuzz(func(t *testing.T, s string) {
		tpl, err := ParseTemplate(s)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Errorf("error for %q does not name the template: %v", s, err)
			}
			return
		}
		out := tpl.Fill(v)
		if r, err := tpl.Render(v); (err == nil && r != out) || (err != nil && out != "") {
			t.Errorf("%q: Fill %q, Render %q, %v", s, out, r, err)
		}
		_ = tpl.Uses(Placeholders...)
		_ = tpl.UsesClock()
		if !strings.Contains(s, "{") && out != s {
			t.Errorf("literal %q filled as %q", s, out)
		}
		if want, ok := legacyFill(s, v); ok && legacyCompatible(s) && out != want {
			t.Errorf("%q filled as %q, before expressions %q", s, out, want)
		}
	})
}

// legacyCompatible reports whether every "{" of s followed by [a-z_] opens a
// lone name "{[a-z_]+}": the only braces whose meaning expressions changed.
func legacyCompatible(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] != '{' || !isNameStart(s[i+1]) {
			continue
		}
		j := i + 1
		for j < len(s) && isNameStart(s[j]) {
			j++
		}
		if j == len(s) || s[j] != '}' {
			return false
		}
	}
	return true
}

// legacyFill is ParseTemplate and Fill as they were before expressions
// (commit 0fc0c06): ok is false where that ParseTemplate failed.
func legacyFill(s string, v Values) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] == '{' {
			j := i + 1
			for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] == '_') {
				j++
			}
			if j < len(s) && s[j] == '}' && j > i+1 {
				switch s[i+1 : j] {
				case "now_us":
					b.WriteString(strconv.FormatInt(v.Now.UnixMicro(), 10))
				case "now_ms":
					b.WriteString(strconv.FormatInt(v.Now.UnixMilli(), 10))
				case "now_s":
					b.WriteString(decimalSeconds(v.Now.UnixMicro()))
				case "window_us":
					b.WriteString(strconv.FormatInt(v.Window.Microseconds(), 10))
				case "window_ms":
					b.WriteString(strconv.FormatInt(v.Window.Milliseconds(), 10))
				case "window_s":
					b.WriteString(decimalSeconds(v.Window.Microseconds()))
				case "limit":
					b.WriteString(strconv.FormatInt(v.Limit, 10))
				case "cost":
					b.WriteString(strconv.FormatInt(v.Cost, 10))
				case "request_id":
					b.WriteString(v.RequestID)
				default:
					return "", false
				}
				i = j + 1
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String(), true
}

// Any predicate compiles or fails with an error; a compiled one evaluates on
// any reply shape to a bool or an error wrapping ErrReplyShape, never a
// panic. ReplyIs(n) agrees with ParseAllowedReply on every shape.
func FuzzAllowedPredicate(f *testing.F) {
	for _, src := range []string{"reply == 1", "reply[1] == 1", "reply <= limit", "reply[2] >= 0", "reply != nil", "reply in [1, 2]",
		"reply[1] == cost", "reply?.[1] == nil", "reply[1][1] == 1", "reply.x == 1", "len(reply) > 0", "reply", "reply[1:2]",
		"all(reply, # >= 0)", "reply[n] == 1", "now() != nil", "$env.reply == 1", "reply[1] == 1 ||"} {
		f.Add(src, int64(1), "OK")
	}
	f.Add("reply == -3", int64(-3), "")
	v := Values{Now: time.UnixMicro(1767225600123456), Window: time.Second, Limit: 10, Cost: 2, RequestID: "r", Key: "k"}
	f.Fuzz(func(t *testing.T, src string, n int64, s string) {
		replies := []any{n, s, nil, []any{n, s}, []any{}, []any{s, n}, []any{[]any{n}, nil}, map[any]any{n: s, s: n}, true}
		shorthand := ReplyIs(n)
		for _, r := range replies {
			got, err := shorthand.Eval(r, v)
			m, werr := ParseAllowedReply(r)
			if got != (werr == nil && m == n) || (err == nil) != (werr == nil) {
				t.Errorf("ReplyIs(%d) on %#v: %v, %v; ParseAllowedReply %d, %v", n, r, got, err, m, werr)
			}
		}
		p, err := ParseReplyPredicate(src)
		if err != nil {
			if errors.Is(err, ErrReplyShape) {
				t.Errorf("parse error of %q wraps ErrReplyShape: %v", src, err)
			}
			return
		}
		_ = p.Uses(Placeholders...)
		for _, r := range replies {
			if _, err := p.Eval(r, v); err != nil && !errors.Is(err, ErrReplyShape) {
				t.Errorf("%q on %#v: error does not wrap ErrReplyShape: %v", src, r, err)
			}
		}
	})
}

// Any reply shape gives a verdict integer or ErrReplyShape, never a panic.
func FuzzParseAllowedReply(f *testing.F) {
	f.Add(uint8(0), int64(1), "x")
	f.Add(uint8(1), int64(0), "")
	f.Add(uint8(2), int64(-3), "OK")
	f.Add(uint8(3), int64(5), "y")
	f.Fuzz(func(t *testing.T, kind uint8, n int64, s string) {
		var v any
		switch kind % 6 {
		case 0:
			v = n
		case 1:
			v = []any{n, s}
		case 2:
			v = s
		case 3:
			v = []any{s, n}
		case 4:
			v = []any{}
		case 5:
			v = nil
		}
		got, err := ParseAllowedReply(v)
		if err == nil && kind%6 > 1 {
			t.Errorf("shape %d (%v) parsed as %d", kind%6, v, got)
		}
		if err != nil && kind%6 <= 1 {
			t.Errorf("shape %d (%v): %v", kind%6, v, err)
		}
		_, _ = algorithms.ParseReply(v)
		_, _ = algorithms.ParseReply([]any{n, n, n, v})
	})
}

func isNameStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
