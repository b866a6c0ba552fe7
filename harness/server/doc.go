// Package server holds what ratelab does on a Redis it was handed, with
// go-redis alone: the handle (Redis: client, address, mode, whether
// ratelab owns it, Close); opening the user's server or Cluster by
// redis://, rediss:// (TLS, ACL users) or redis+cluster:// URL (OpenURL,
// OpenReadOnly); SCAN, MEMORY USAGE and UNLINK of ratelab's own keys
// (only under KeyPrefix); run ids, run registration and the leftovers of
// killed runs (`ratelab clean`); SCRIPT KILL of a busy script; the server
// clock offset; INFO parsing; the ACL check (CheckAccess) and the guard
// under which a user's script runs.
//
// It imports no Docker client and no algorithm: throwaway servers
// (exec, container, cluster) are package harness/engine's, and come back
// as a *Redis of this package.
//
// A Redis given by URL is the user's: server never flushes it and touches
// only keys under "ratelab:<run id>:".
package server
