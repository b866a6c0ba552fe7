package measure

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxTraceRequests is the most requests a counter-example's Trace holds:
// a verification keeps no longer trace, so ReadVerify refuses a file whose
// trace has more, before reading the rest of it.
const MaxTraceRequests = 100_000

// ErrTraceTooLong is in the chain of ReadVerify's error for a verify.json
// whose counter-example's trace holds more than MaxTraceRequests requests.
var ErrTraceTooLong = errors.New("trace longer than a verification keeps")

// arrayBounds are the arrays of a verify.json whose length has a bound,
// by their path from the top object (".key.key..."), and the bound. No
// path goes through an array.
var arrayBounds = map[string]int{
	".counter_example.trace.requests": MaxTraceRequests,
}

// checkCounts reads a verify.json from r as a stream and stops at the
// first element past an array's bound (arrayBounds), with an error
// wrapping ErrTraceTooLong: the rest of r is never read. It descends only
// the objects on the way to a bounded array; every other value, and each
// element of a bounded array, is read as one value and dropped, so what
// is held at a time is one such value. Anything else passes, invalid JSON
// included (the full decode that follows reports it).
func checkCounts(r io.Reader) error {
	dec := json.NewDecoder(r)
	var skip json.RawMessage // reused: one skipped value at a time
	var walk func(path string) error
	walk = func(path string) error {
		onWay := false
		for p := range arrayBounds {
			onWay = onWay || strings.HasPrefix(p, path)
		}
		if !onWay {
			return dec.Decode(&skip)
		}
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			for dec.More() {
				key, err := dec.Token()
				if err != nil {
					return err
				}
				if err := walk(path + "." + fmt.Sprint(key)); err != nil {
					return err
				}
			}
		case json.Delim('['):
			bound := arrayBounds[path]
			for n := 1; dec.More(); n++ {
				if bound > 0 && n > bound {
					return fmt.Errorf("%w: %s has more than %d elements", ErrTraceTooLong, path[1:], bound)
				}
				if err := dec.Decode(&skip); err != nil {
					return err
				}
			}
		default:
			return nil // a scalar where an object was expected: the full decode says so
		}
		_, err = dec.Token() // the closing delimiter
		return err
	}
	if err := walk(""); errors.Is(err, ErrTraceTooLong) {
		return err
	}
	return nil
}
