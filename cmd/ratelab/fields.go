package main

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/field"
)

// fieldUsage turns the error of a Config's Validate into a usage error
// naming the flag of its field: flagOf maps field names to flags ("window"
// to "--window"). A flag that was not given, whose default is what failed,
// is said to be required. An error about no mapped field is passed on as a
// usage error.
func fieldUsage(c *cobra.Command, err error, flagOf map[string]string) error {
	var fe *field.Error
	if errors.As(err, &fe) && flagOf[fe.Name] != "" && !c.Flags().Changed(strings.TrimPrefix(flagOf[fe.Name], "--")) {
		return usagef("%s: %w (it is required)", flagOf[fe.Name], fe.Err)
	}
	return flagError(err, flagOf)
}
