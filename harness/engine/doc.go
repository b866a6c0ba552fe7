// Package engine gets ratelab a Redis wherever it is: a throwaway
// redis-server (exec), a container (testcontainers-go), a throwaway local
// Cluster, or the user's own server or Cluster by redis://, rediss:// (TLS,
// ACL users) or redis+cluster:// URL. It also holds what ratelab does to a
// Redis outside the algorithms: SCAN and UNLINK of its own keys (only
// under KeyPrefix), MEMORY USAGE, the leftovers of killed runs, the ACL
// check and the server clock offset.
//
// A Redis given by URL is the user's: engine never flushes it and touches
// only keys under "ratelab:<run id>:".
package engine
