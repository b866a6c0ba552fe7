package clientside

import (
	"context"
	"time"

	"github.com/ratelab/ratelab/vclock"
)

// Key TTLs on the virtual clock. With Exec.Table every command goes as the
// call of vclock's deadline table form (the same Lua as the endpoint's),
// and the scripts it EVALs are rewritten for it. With Exec.Expiry the table
// of deadlines is a vclock.Deadlines, shared by the clients of one
// limiter; a round trip deletes the keys it names whose deadline has
// passed, sends the translated commands and settles their replies.

// expiryWire deletes the keys of cmds whose deadline has passed at e.Now
// (Redis would have expired them before the commands, as it does lazily)
// and returns the commands to send in place of cmds and their
// translations, for expirySettle.
func (e *Exec) expiryWire(ctx context.Context, cmds [][]string) ([][]string, []vclock.Translated, error) {
	now := time.UnixMicro(e.Now)
	if due := e.Expiry.Due(now, cmds); len(due) > 0 {
		args := []any{"DEL"}
		for _, k := range due {
			args = append(args, k)
		}
		if err := e.Conn.Do(ctx, args...).Err(); err != nil {
			return nil, nil, err
		}
	}
	tr := make([]vclock.Translated, len(cmds))
	wire := make([][]string, len(cmds))
	for i, c := range cmds {
		tr[i] = e.Expiry.Translate(now, c)
		wire[i] = tr[i].Wire
	}
	return wire, tr, nil
}

// expirySettle turns the replies to the commands of tr, in place, into
// the replies to the commands they were made of; an error reply stays.
func (e *Exec) expirySettle(tr []vclock.Translated, replies []any) {
	now := time.UnixMicro(e.Now)
	for i := range replies {
		if _, bad := replies[i].(errorReply); !bad {
			replies[i] = e.Expiry.Settle(now, tr[i], replies[i])
		}
	}
}

// tableWire returns the commands to send in place of cmds on e.Table,
// after loading in Redis the rewritten scripts they need.
func (e *Exec) tableWire(ctx context.Context, cmds [][]string) ([][]string, error) {
	now := time.UnixMicro(e.Now)
	wire := make([][]string, len(cmds))
	var load []string
	for i, c := range cmds {
		w, l := e.Table.Wire(now, e.TableKey, e.WrittenKey, c)
		wire[i] = w
		load = append(load, l...)
	}
	for _, src := range load {
		if err := e.Conn.Do(ctx, "SCRIPT", "LOAD", src).Err(); err != nil {
			return nil, err
		}
		e.Table.Loaded(src)
	}
	return wire, nil
}
