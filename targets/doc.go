// Package targets turns a limiter as a user describes it — a built-in
// algorithm, a Lua script with its keys, arguments and reply predicate, or an
// HTTP endpoint, given by flags or by a target file (ratelab.yaml, see
// docs/config.md) — into an algorithms.Limiter. Errors name fields (and,
// for files, the file and line); the command line maps them to flags.
package targets
