package input

import (
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Clean returns s fit for a terminal: a control character other than
// newline and tab (ESC, BEL, NUL, CR, DEL, and the C1 controls
// U+0080..U+009F, which some terminals obey too) is written as \u00XX, and
// a byte that is not UTF-8 as \xNN, so that text from a file or a server
// (a forged results.json, a script's error reply) can never move the
// cursor, recolour or retitle the user's terminal. Text with neither comes
// back unchanged.
func Clean(s string) string {
	if !needsCleaning(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case isControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsCleaning(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || isControl(r) {
			return true
		}
		i += size
	}
	return false
}

func isControl(r rune) bool {
	return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f
}

// CleanStrings applies Clean to every string reachable from v, a pointer
// (fields of structs, elements of slices and arrays, values of maps,
// through pointers and interfaces), in place: results read from a file
// are cleaned once, and every renderer may then print them (and colour
// them) as it likes. Unexported fields are left alone. Not safe while
// another goroutine uses v.
func CleanStrings(v any) {
	cleanValue(reflect.ValueOf(v), 0)
}

func cleanValue(v reflect.Value, depth int) {
	if depth > 64 { // results are shallow; a cycle is not followed forever
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			e := v.Elem()
			if v.Kind() == reflect.Interface && e.Kind() == reflect.String && v.CanSet() {
				v.Set(reflect.ValueOf(Clean(e.String())).Convert(e.Type()))
				return
			}
			cleanValue(e, depth+1)
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(Clean(v.String()))
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				cleanValue(v.Field(i), depth+1)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes, not text
		}
		for i := 0; i < v.Len(); i++ {
			cleanValue(v.Index(i), depth+1)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := v.MapIndex(k)
			if e.Kind() == reflect.String {
				v.SetMapIndex(k, reflect.ValueOf(Clean(e.String())).Convert(e.Type()))
			} else if e.Kind() == reflect.Pointer {
				cleanValue(e, depth+1)
			}
		}
	}
}
