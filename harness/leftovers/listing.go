package leftovers

import (
	"bytes"
	"fmt"
	"io"

	"github.com/ratelab/ratelab/measure"
)

// writeLeftovers writes `ratelab clean`'s listing to w: one line per run of
// runs (its prefix, keys, MEMORY USAGE bytes and an example key, and
// whether it is live and skipped, kept for want of a run record, or to be
// removed), then the total: "no ratelab keys found", the removed keys when
// removed (removedKeys), or else the keys a dry run would remove. Errors
// come from w.
func writeLeftovers(w io.Writer, runs []measure.Leftover, removed bool, removedKeys int) error {
	var b bytes.Buffer
	would := 0
	for _, l := range runs {
		fmt.Fprintf(&b, "%s  %d keys  %d bytes  (e.g. %s)", l.Prefix, len(l.Keys), l.MemoryBytes, l.Keys[0])
		switch {
		case l.Live:
			who := ""
			if r := l.Record; r != nil {
				who = fmt.Sprintf(" (pid %d on %s, started %s)", r.PID, r.Host, r.Started.Format("2006-01-02 15:04:05Z"))
			}
			fmt.Fprintf(&b, "  live run%s: skipped", who)
		case !l.Remove:
			fmt.Fprintf(&b, "  no run record (an older ratelab's run?): kept; --run %s --yes removes it", l.RunID)
		default:
			would += len(l.Keys)
		}
		b.WriteString("\n")
	}
	switch {
	case len(runs) == 0:
		b.WriteString("no ratelab keys found\n")
	case removed:
		fmt.Fprintf(&b, "removed %d keys\n", removedKeys)
	default:
		fmt.Fprintf(&b, "%d keys would be removed (dry run: pass --yes to remove them)\n", would)
	}
	_, err := w.Write(b.Bytes())
	return err
}
