// Package server is the handle on a Redis ratelab was handed, with
// go-redis alone: the Redis (client, address, mode, whether ratelab owns
// it, Close); opening the user's server or Cluster by redis://, rediss://
// (TLS, ACL users) or redis+cluster:// URL (OpenURL, OpenReadOnly) with
// the ACL check (CheckAccess); run ids and SCAN, MEMORY USAGE and UNLINK of
// ratelab's own keys (only under KeyPrefix); a Cluster's masters (Nodes);
// INFO parsing and the servers' run_ids; the server clock offset; the
// redacted form of a URL; one-time ACL users (SetUser, TempUser); the
// abort of every call on Ctrl-C (AbortCalls); and what a server's state
// made of a command's error (Explain, CauseError, EnvError).
//
// The safety features built on it each live in a package of their own:
// harness/leftovers (a run's registration, its heartbeat, ratelab clean),
// harness/guard (a user's script under a temporary ACL user, the probe on
// a throwaway server), harness/busy (SCRIPT KILL of ratelab's own busy
// script) and harness/evict (the eviction check and watch, run by OpenURL
// through Options.BeforeWrite).
//
// It imports no Docker client and no algorithm: throwaway servers
// (exec, container, cluster) are package harness/engine's, and come back
// as a *Redis of this package.
//
// A Redis given by URL is the user's: server never flushes it and touches
// only keys under "ratelab:<run id>:".
package server
