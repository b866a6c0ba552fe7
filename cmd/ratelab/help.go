package main

import (
	"embed"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// command is the command of use (named by its first word) and short, whose
// long help and examples are help/<name>.*.txt (helpText, args filling the
// long help), that takes no arguments and runs run.
func command(use, short string, run func(c *cobra.Command) error, args ...string) *cobra.Command {
	name, _, _ := strings.Cut(use, " ")
	return &cobra.Command{Use: use, Short: short, Long: helpText(name, "long", args...), Example: helpText(name, "example"),
		Args: cobra.NoArgs, RunE: func(c *cobra.Command, _ []string) error { return run(c) }}
}

// helpFiles are the commands' long help and examples, kept as text beside
// the code: help/<command>.long.txt and help/<command>.example.txt.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpText returns help/<command>.<part>.txt with {{0}}, {{1}}, ... replaced
// by args (lists that come from the registries, such as the scenario names).
func helpText(command, part string, args ...string) string {
	b, err := helpFiles.ReadFile("help/" + command + "." + part + ".txt")
	if err != nil {
		panic(fmt.Sprintf("ratelab: no help text for %s %s", command, part))
	}
	s := string(b)
	for i, a := range args {
		s = strings.ReplaceAll(s, fmt.Sprintf("{{%d}}", i), a)
	}
	return s
}
