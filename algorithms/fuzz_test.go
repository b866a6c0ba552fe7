package algorithms

import (
	"strings"
	"testing"
	"time"
)

// Any template parses or fails with an error; a parsed one fills without a
// panic, and text without placeholders comes back unchanged.
func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"{now_us}", "[[{window_s}, {limit}, 1]]", `{"a":{cost}}`, "{nwo_us}", "{", "}{", "{now_s}{now_s}", "x{request_id}y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tpl, err := ParseTemplate(s)
		if err != nil {
			return
		}
		out := tpl.Fill(Values{Now: time.UnixMicro(1767225600123456), Window: 1500 * time.Millisecond, Limit: 7, Cost: 2, RequestID: "r"})
		if !strings.Contains(s, "{") && out != s {
			t.Errorf("literal %q filled as %q", s, out)
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
		_, _ = ParseReply(v)
		_, _ = ParseReply([]any{n, n, n, v})
	})
}
