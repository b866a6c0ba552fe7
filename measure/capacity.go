package measure

// CapacityResults is what `ratelab capacity` measured; results.json holds it.
type CapacityResults struct {
	// Header says how the measurement was made (Command "capacity"),
	// flattened into the JSON.
	Header
	Config CapacityRunConfig  `json:"config"`
	Server CapacityServerInfo `json:"server"`
	// Results has one row per algorithm x limit, in run order.
	Results []CapacityRow `json:"results"`
	// Trim is the measurement of a sorted set trimmed back below the
	// listpack limit (nil when sliding-log was not measured).
	Trim *TrimResult `json:"trim,omitempty"`
	// Warnings lists conditions that make the deltas less exact (a replica
	// attached, a server that did not settle).
	Warnings []string `json:"warnings,omitempty"`
	// Machine is how busy Redis and this machine were over the
	// measurement, and whether the machine was the limit of its duration
	// (nil when nothing was measured).
	Machine *MachineLoad `json:"machine,omitempty"`
}

// CapacityRunConfig repeats what was asked for, after defaults.
type CapacityRunConfig struct {
	Algorithms  []string `json:"algorithms"`
	Limits      []int64  `json:"limits"`
	Keys        int      `json:"keys"`
	ActiveKeys  int64    `json:"active_keys"`
	WindowMS    int64    `json:"window_ms"`
	PrecisionMS int64    `json:"precision_ms,omitempty"`
	Budget      int64    `json:"budget"`
	Prefix      string   `json:"prefix"`
}

// CapacityServerInfo is the server configuration the encodings depend on.
type CapacityServerInfo struct {
	// ZsetMaxListpackEntries is zset-max-listpack-entries (128 by default):
	// a sorted set with more members is a skiplist. 0 when CONFIG GET was refused.
	ZsetMaxListpackEntries int64 `json:"zset_max_listpack_entries"`
	// HashMaxListpackEntries is hash-max-listpack-entries (512 by default).
	HashMaxListpackEntries int64 `json:"hash_max_listpack_entries"`
}

// CapacityRow is the memory of one algorithm's keys filled to one limit.
// Bytes are per key unless the name says otherwise.
type CapacityRow struct {
	Algorithm string `json:"algorithm"`
	// Limit is the limit the keys were filled to (cost units per window).
	Limit     int64  `json:"limit"`
	WindowMS  int64  `json:"window_ms"`
	LimitDesc string `json:"limit_desc"`
	// Keys is the N actually used (KeysWanted scaled down by the budget).
	Keys       int `json:"keys"`
	KeysWanted int `json:"keys_wanted"`
	// Calls is the script calls made to fill the Keys keys.
	Calls int64 `json:"calls"`
	// KeyNameBytes is the length of one key's name (it is part of the memory).
	KeyNameBytes int `json:"key_name_bytes"`
	// RedisKeys is the Redis keys per filled key (2 for the window
	// counters, which hold the previous window's counter beside the
	// current one; a user's script may derive more).
	RedisKeys float64 `json:"redis_keys"`
	// Type and Encoding are TYPE and OBJECT ENCODING of a filled key.
	Type     string `json:"type"`
	Encoding string `json:"encoding"`
	// Entries is the elements one key holds: ZCARD, HLEN, or 1 for a STRING.
	Entries int64 `json:"entries"`
	// MemoryBytes is MEMORY USAGE key SAMPLES 0, averaged over the keys.
	MemoryBytes int64 `json:"memory_bytes"`
	// BytesPerEntry is MemoryBytes / Entries.
	BytesPerEntry float64 `json:"bytes_per_entry"`
	// TTLOverheadBytes is what a key with a TTL costs beyond its MEMORY
	// USAGE, measured on calibration keys at the same N: the expires entry,
	// both dicts' slots and allocator rounding of the key's dictEntry.
	TTLOverheadBytes float64 `json:"ttl_overhead_bytes"`
	// MemoryWithTTLBytes is MemoryBytes + TTLOverheadBytes ("MU + TTL").
	MemoryWithTTLBytes float64 `json:"memory_with_ttl_bytes"`
	// UsedMemoryDeltaBytes is the growth of INFO used_memory (less client
	// buffers, mem_clients_normal) per key while the Keys keys were filled.
	UsedMemoryDeltaBytes float64 `json:"used_memory_delta_bytes"`
	// Agreement is MemoryWithTTLBytes / UsedMemoryDeltaBytes (1 = exact).
	Agreement float64 `json:"agreement"`
	// ActiveKeys is M; ProjectedBytes = M x UsedMemoryDeltaBytes.
	ActiveKeys     int64 `json:"active_keys"`
	ProjectedBytes int64 `json:"projected_bytes"`
	// FillMS is the wall time of the measured fill, ms.
	FillMS int64 `json:"fill_ms"`
	// Nodes splits the Keys keys and the used_memory delta over the masters
	// of a Redis Cluster, in address order (empty for a single server).
	Nodes []NodeMemory `json:"nodes,omitempty"`
}

// TrimResult shows that a sorted set trimmed back below
// zset-max-listpack-entries stays a skiplist: sliding-log keys filled to
// FilledEntries, then trimmed by one decision a window later to Entries,
// against fresh keys filled to the same Entries.
type TrimResult struct {
	Algorithm     string `json:"algorithm"`
	Keys          int    `json:"keys"`
	FilledEntries int64  `json:"filled_entries"`
	Entries       int64  `json:"entries"`
	// Encoding and MemoryBytes (MEMORY USAGE SAMPLES 0, per key) of the trimmed keys.
	Encoding    string `json:"encoding"`
	MemoryBytes int64  `json:"memory_bytes"`
	// FreshEncoding and FreshMemoryBytes of keys filled to Entries directly.
	FreshEncoding    string `json:"fresh_encoding"`
	FreshMemoryBytes int64  `json:"fresh_memory_bytes"`
}

// NodeMemory is one master's share of keys filled through a Redis Cluster.
type NodeMemory struct {
	// Addr is the master's address.
	Addr string `json:"addr"`
	// Keys is how many of the filled keys this master holds.
	Keys int64 `json:"keys"`
	// UsedMemoryDeltaBytes is the growth of this master's used_memory (less
	// client buffers) over the fill, in bytes, for all its keys.
	UsedMemoryDeltaBytes int64 `json:"used_memory_delta_bytes"`
}
