package main

import (
	"errors"

	"github.com/ratelab/ratelab/field"
)

// flagError turns a library's *field.Error into a usage error naming the
// field's flag (flagOf[name], or the name itself): "--window: ...".
func flagError(err error, flagOf map[string]string) error {
	var fe *field.Error
	if !errors.As(err, &fe) {
		return usageError{err}
	}
	flag, ok := flagOf[fe.Name]
	if !ok {
		flag = "--" + fe.Name
	}
	return usagef("%s: %w", flag, fe.Err)
}
