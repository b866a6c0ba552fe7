package main

import (
	"io"

	"github.com/spf13/cobra"
)

func newBenchCmd(stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{Use: "bench"}
}
