package server

import (
	"strconv"
	"strings"
)

// FunctionPrefix starts the name of every library ratelab loads for a
// function target, and of every function in it: "ratelab_" + the run id
// with "_" for "-" + "_" + a number per library, then
// custom.FunctionLibraries' suffixes ("_w", "_t", "_x"). Function and
// library names are global on a server: ratelab never gives a library or
// function a name that does not start so, and never deletes one that does
// not (`ratelab clean` only those of runs that are over).
const FunctionPrefix = "ratelab_"

// FunctionNamespace is the namespace (custom.FunctionLibraries) of the n-th
// function library of run runID: "ratelab_20261122T030515_cfab_1".
func FunctionNamespace(runID string, n int) string {
	return FunctionPrefix + strings.ReplaceAll(runID, "-", "_") + "_" + strconv.Itoa(n)
}

// RunOfLibrary returns the run id of a library name made by
// FunctionNamespace (and custom.FunctionLibraries), and whether it is one.
func RunOfLibrary(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, FunctionPrefix)
	if !ok || len(rest) < 21 || rest[15] != '_' {
		return "", false
	}
	id := rest[:15] + "-" + rest[16:20]
	return id, IsRunID(id) && strings.HasPrefix(rest[20:], "_")
}
