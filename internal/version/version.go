// Package version says which build of ratelab is running: what
// `ratelab --version` prints and every result's Header records.
package version

import (
	"runtime/debug"
	"sync"
)

// Version, when set at link time, is the version ratelab reports, e.g.
//
//	go build -ldflags "-X github.com/ratelab/ratelab/internal/version.Version=$(git describe --always --dirty)"
//
// (the Makefile's build does this). Empty: String reads the build info.
var Version string

var (
	once   sync.Once
	cached string
)

// String returns the running build's version: Version when set at link
// time; else the module version from the build info ("v0.3.0" from `go
// install module@v0.3.0`; Go 1.24+ stamps a checkout's build with a
// pseudo-version holding the revision and "+dirty"); else the VCS revision
// (12 hex digits, "-dirty" when the tree had changes); else "(devel)" or,
// without build info, "unknown". Safe for concurrent use.
func String() string {
	if Version != "" {
		return Version
	}
	once.Do(func() { cached = fromBuildInfo() })
	return cached
}

func fromBuildInfo() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		if bi.Main.Version != "" {
			return bi.Main.Version
		}
		return "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified {
		rev += "-dirty"
	}
	return rev
}
