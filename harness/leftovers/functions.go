package leftovers

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/server"
)

// Library is a function library a run loaded for a function target
// (server.FunctionNamespace), found by FindLibraries.
type Library struct {
	// Name is the library's; RunID the run's that loaded it.
	Name, RunID string
	// Live: the run still runs (as for GuardUser): the library is left
	// alone.
	Live bool
}

// FindLibraries lists the function libraries of ratelab's runs on c
// (FUNCTION LIST LIBRARYNAME ratelab_, only the names that
// server.RunOfLibrary reads a run id from), only cfg.Run's when set, each
// with whether its run is live (as FindLeftovers decides it). A server
// without functions (before Redis 7) or that will not list them has none
// to show: nil, nil. On a Cluster, the node c answers for.
func FindLibraries(ctx context.Context, c redis.UniversalClient, cfg CleanConfig) ([]Library, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	libs, err := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: server.FunctionPrefix + "*"}).Result()
	if err != nil {
		if server.IsRedisError(err) {
			return nil, nil
		}
		return nil, err
	}
	var out []Library
	for _, l := range libs {
		id, ok := server.RunOfLibrary(l.Name)
		if !ok || cfg.Run != "" && id != cfg.Run {
			continue
		}
		lo := Leftover{RunID: id}
		if err := checkLeftover(ctx, c, &lo); err != nil {
			return nil, err
		}
		out = append(out, Library{Name: l.Name, RunID: id, Live: lo.Live})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}

// RemoveLibraries deletes the libraries that are not Live (FUNCTION
// DELETE, each by its name), after checking each run once more, and
// returns how many it removed.
func RemoveLibraries(ctx context.Context, c redis.UniversalClient, ls []Library) (int, error) {
	n := 0
	for i := range ls {
		l := &ls[i]
		if l.Live {
			continue
		}
		lo := Leftover{RunID: l.RunID}
		if err := checkLeftover(ctx, c, &lo); err != nil {
			return n, err
		}
		if l.Live = lo.Live; l.Live {
			continue
		}
		if err := c.FunctionDelete(ctx, l.Name).Err(); err != nil {
			return n, fmt.Errorf("FUNCTION DELETE %s: %w", l.Name, err)
		}
		n++
	}
	return n, nil
}

// cleanLibraries, with remove, removes the function libraries whose run
// is over, and lists them all on w.
func cleanLibraries(ctx context.Context, w io.Writer, c redis.UniversalClient, libs []Library, remove bool) error {
	var err error
	if remove {
		_, err = RemoveLibraries(ctx, c, libs) // marks those found live since
	}
	for _, l := range libs {
		fmt.Fprintf(w, "function library %s (run %s): %s\n", l.Name, l.RunID, leftState(l.Live, remove && err == nil))
	}
	return err
}
