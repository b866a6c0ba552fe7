package reports

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/ratelab/ratelab/measure"
)

// The decision file (`--decisions FILE`): every decision of a run, streamed
// as it is made (measure.DecisionLog), in one of two encodings, compressed
// or not, chosen by the file's name (DecisionFileFormat):
//
//   - JSON lines (a name ending .jsonl, .jsonl.gz or .jsonl.zst): one
//     measure.Record per line, as decisions.jsonl always was.
//   - the compact encoding (any other name), ratelab decisions v1: text,
//     one line per decision, tab-separated fields, each number written as
//     its change from the previous decision of the same algorithm and
//     scenario where that change is small, zero written as nothing, and
//     the algorithm, scenario and key named once each. Its first line is
//     CompactHeader. Then lines are one of
//     "S <id> <algorithm> <scenario>" (a new stream: algorithm and scenario
//     quoted as Go strings), "K <id> <key>" (a new key, quoted), or a
//     decision: stream id, seq - previous seq - 1, client, key id,
//     cost - 1, at_us - previous at_us, sent_us - previous sent_us,
//     recv_us - sent_us, decided_at_us - at_us - (the same of the previous
//     decision), allowed (1 or nothing), remaining, retry_after_us, error
//     (quoted, or nothing); trailing empty fields are left out. "Previous"
//     is the stream's previous decision (zero for its first).
//
// A name ending .gz is gzip-compressed, .zst zstd-compressed (the smaller:
// about 10-20 B per decision in the compact encoding, against ~280 B for
// plain JSON lines). ReadDecisions reads all six back.

// CompactHeader is the first line of a decision file in the compact
// encoding.
const CompactHeader = "# ratelab decisions v1: stream seq client key cost at_us sent_us latency_us decided_us allowed remaining retry_after_us error"

// compactStream is the state of one algorithm and scenario in the compact
// encoding: the previous decision's figures the next one is written from.
type compactStream struct {
	id                int
	seq, at, sent, dd int64
}

// NewCompactEncoder returns the encode function of the compact encoding
// (for measure.NewDecisionLogEncoded): it writes CompactHeader before the
// first record. It keeps state from record to record: one per log.
func NewCompactEncoder() func(w *bufio.Writer, r *measure.Record) error {
	streams := map[[2]string]*compactStream{}
	keys := map[string]int{}
	var line []byte
	started := false
	return func(w *bufio.Writer, r *measure.Record) error {
		if !started {
			started = true
			if _, err := w.WriteString(CompactHeader + "\n"); err != nil {
				return err
			}
		}
		line = line[:0]
		sk := [2]string{r.Algorithm, r.Scenario}
		st := streams[sk]
		if st == nil {
			st = &compactStream{id: len(streams), seq: -1}
			streams[sk] = st
			line = append(line, "S\t"...)
			line = strconv.AppendInt(line, int64(st.id), 10)
			line = append(line, '\t')
			line = strconv.AppendQuote(line, r.Algorithm)
			line = append(line, '\t')
			line = strconv.AppendQuote(line, r.Scenario)
			line = append(line, '\n')
		}
		kid, ok := keys[r.Key]
		if !ok {
			kid = len(keys)
			keys[r.Key] = kid
			line = append(line, "K\t"...)
			line = strconv.AppendInt(line, int64(kid), 10)
			line = append(line, '\t')
			line = strconv.AppendQuote(line, r.Key)
			line = append(line, '\n')
		}
		dd := r.DecidedAtUS - r.AtUS
		allowed := int64(0)
		if r.Allowed {
			allowed = 1
		}
		start := len(line)
		line = strconv.AppendInt(line, int64(st.id), 10)
		for _, v := range [...]int64{int64(r.Seq) - st.seq - 1, int64(r.Client), int64(kid), r.Cost - 1,
			r.AtUS - st.at, r.SentUS - st.sent, r.RecvUS - r.SentUS, dd - st.dd, allowed, r.Remaining, r.RetryAfterUS} {
			line = append(line, '\t')
			if v != 0 {
				line = strconv.AppendInt(line, v, 10)
			}
		}
		line = append(line, '\t')
		if r.Error != "" {
			line = strconv.AppendQuote(line, r.Error)
		}
		for len(line) > start && line[len(line)-1] == '\t' {
			line = line[:len(line)-1]
		}
		line = append(line, '\n')
		st.seq, st.at, st.sent, st.dd = int64(r.Seq), r.AtUS, r.SentUS, dd
		_, err := w.Write(line)
		return err
	}
}

// ReadDecisions reads a decision file written by CreateDecisionFile (or
// decisions.jsonl) from r and calls fn with each record, in order: JSON
// lines or the compact encoding, plain, gzip or zstd, told apart by the
// content. It stops at fn's first error and returns it. A line it cannot
// read is an error naming its number.
func ReadDecisions(r io.Reader, fn func(measure.Record) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, _ := br.Peek(4)
	var src io.Reader = br
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		gz, err := gzip.NewReader(br)
		if err != nil {
			return err
		}
		defer func() { _ = gz.Close() }() // a reader: the reads reported its errors
		src = gz
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		z, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return err
		}
		defer z.Close()
		src = z
	}
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	type stream struct {
		alg, scenario     string
		seq, at, sent, dd int64
	}
	var streams []*stream
	var keys []string
	compact := false
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if n == 1 && line == CompactHeader {
			compact = true
			continue
		}
		if !compact {
			if strings.TrimSpace(line) == "" {
				continue
			}
			var rec measure.Record
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				return fmt.Errorf("line %d: %w", n, err)
			}
			if err := fn(rec); err != nil {
				return err
			}
			continue
		}
		f := strings.Split(line, "\t")
		switch f[0] {
		case "S", "K":
			if len(f) < 3 {
				return fmt.Errorf("line %d: %d fields, want 3 or more", n, len(f))
			}
			id, err := strconv.Atoi(f[1])
			a, qerr := strconv.Unquote(f[2])
			if err != nil || qerr != nil {
				return fmt.Errorf("line %d: %q: not an id and a quoted name", n, line)
			}
			if f[0] == "K" {
				if id != len(keys) {
					return fmt.Errorf("line %d: key %d, want %d", n, id, len(keys))
				}
				keys = append(keys, a)
				continue
			}
			if len(f) != 4 || id != len(streams) {
				return fmt.Errorf("line %d: %q: not stream %d", n, line, len(streams))
			}
			sn, err := strconv.Unquote(f[3])
			if err != nil {
				return fmt.Errorf("line %d: scenario: %w", n, err)
			}
			streams = append(streams, &stream{alg: a, scenario: sn, seq: -1})
			continue
		}
		if len(f) > 13 {
			return fmt.Errorf("line %d: %d fields, want at most 13", n, len(f))
		}
		var v [12]int64
		for i := 0; i < 12 && i < len(f); i++ {
			if f[i] == "" {
				continue
			}
			x, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return fmt.Errorf("line %d field %d: %w", n, i+1, err)
			}
			v[i] = x
		}
		if v[0] < 0 || v[0] >= int64(len(streams)) || v[3] < 0 || v[3] >= int64(len(keys)) {
			return fmt.Errorf("line %d: stream %d or key %d not defined before", n, v[0], v[3])
		}
		st := streams[v[0]]
		rec := measure.Record{Algorithm: st.alg, Scenario: st.scenario, Client: int(v[2]), Key: keys[v[3]], Cost: v[4] + 1,
			Allowed: v[9] == 1, Remaining: v[10], RetryAfterUS: v[11]}
		st.seq += v[1] + 1
		st.at += v[5]
		st.sent += v[6]
		st.dd += v[8]
		rec.Seq, rec.AtUS, rec.SentUS = int(st.seq), st.at, st.sent
		rec.RecvUS = st.sent + v[7]
		rec.LatencyUS = v[7]
		rec.DecidedAtUS = st.at + st.dd
		if len(f) == 13 && f[12] != "" {
			e, err := strconv.Unquote(f[12])
			if err != nil {
				return fmt.Errorf("line %d: error: %w", n, err)
			}
			rec.Error = e
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return sc.Err()
}
