package main

import (
	"errors"
	"os"

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

// writable checks that results can be written to dir (a probe file is
// created and removed), so a read-only --out stops the command before it
// measures anything. Errors name --out.
func writable(dir string) error {
	f, err := os.CreateTemp(dir, ".ratelab-probe-*")
	if err != nil {
		return usagef("--out: %s is not writable: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}
