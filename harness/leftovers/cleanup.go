package leftovers

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/ratelab/ratelab/harness/localredis"
	"github.com/ratelab/ratelab/harness/server"
)

// Run lists on w what killed runs left on rd that cfg selects, and with
// remove removes it: the keys of runs that are over (writeLeftovers),
// the guards' ACL users and the function libraries whose run is over, and this machine's cluster
// directories of killed runs. A live run's keys and users are left alone;
// live says whether cfg.Run names a run that is still running. Errors say
// what failed ("removed 3 keys, then: ...", "ACL USERS: ...",
// "FUNCTION LIST: ..."); w's errors
// are returned as they are.
func Run(ctx context.Context, rd *server.Redis, cfg CleanConfig, remove bool, w io.Writer) (live bool, err error) {
	runs, err := FindLeftovers(ctx, rd.Client, cfg)
	if err != nil {
		return false, err
	}
	removed := 0
	if remove {
		removed, err = RemoveLeftovers(ctx, rd.Client, runs)
		if err != nil {
			return false, fmt.Errorf("removed %d keys, then: %w", removed, err)
		}
	}
	if err := writeLeftovers(w, runs, remove, removed); err != nil {
		return false, err
	}
	users, err := FindGuardUsers(ctx, rd.Client, cfg)
	if err != nil {
		return false, fmt.Errorf("ACL USERS: %w", err)
	}
	if err := cleanUsers(ctx, w, rd, users, remove); err != nil {
		return false, err
	}
	libs, err := FindLibraries(ctx, rd.Client, cfg)
	if err != nil {
		return false, fmt.Errorf("FUNCTION LIST: %w", err)
	}
	if err := cleanLibraries(ctx, w, rd.Client, libs, remove); err != nil {
		return false, err
	}
	if remove { // the temporary directories of --redis cluster runs that were killed
		for _, d := range localredis.SweepClusterDirs() {
			fmt.Fprintf(w, "removed %s (a killed --redis cluster run's)\n", d)
		}
	}
	return cfg.Run != "" && slices.ContainsFunc(runs, func(l Leftover) bool { return l.Live }), nil
}

// cleanUsers, with remove, removes the guards' ACL users whose run is
// over, and lists them all on w.
func cleanUsers(ctx context.Context, w io.Writer, rd *server.Redis, users []GuardUser, remove bool) error {
	var err error
	if remove {
		_, err = RemoveGuardUsers(ctx, rd.Client, users) // marks those found live since
	}
	for _, u := range users {
		fmt.Fprintf(w, "ACL user %s (run %s): %s\n", u.Name, u.RunID, leftState(u.Live, remove && err == nil))
	}
	return err
}

// leftState is what ratelab clean says of something a run left: live (its
// run still running), removed, or to remove with --yes.
func leftState(live, removed bool) string {
	switch {
	case live:
		return "its run is still running: left alone"
	case removed:
		return "removed"
	}
	return "its run is over: remove it with --yes"
}
