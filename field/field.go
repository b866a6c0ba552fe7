// Package field is the error of a bad configuration value, named by its
// field, so that a library says what was wrong in its own words
// ("window: must be >= 1ms, got 1ns") and only the command line maps the
// field to its flag ("--window: must be >= 1ms, got 1ns").
package field

import (
	"errors"
	"fmt"
)

// Error is a bad value of one field of a configuration. Name is the
// field's name as the library's docs spell it, lower case with dots for
// nesting ("window", "limits[2]", "http.url").
type Error struct {
	Name string
	Err  error
}

// Error renders "name: reason".
func (e *Error) Error() string { return e.Name + ": " + e.Err.Error() }

// Unwrap returns the reason.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error for field name with a reason formatted as by
// fmt.Errorf (%w wraps).
func Errorf(name, format string, args ...any) error {
	return &Error{Name: name, Err: fmt.Errorf(format, args...)}
}

// Name returns the field an error is about (the outermost *Error in its
// chain) and true, or "" and false when it is not about a field.
func Name(err error) (string, bool) {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Name, true
	}
	return "", false
}
