package vclock

import (
	"slices"
	"strconv"
	"strings"
)

// Input is one element of KEYS or ARGV that a script reads.
type Input struct {
	// Table is "KEYS" or "ARGV".
	Table string
	// Index is the 1-based index read (ARGV[2]: 2); 0 means the table
	// is read by a computed index (ARGV[i]), counted (#ARGV) or passed
	// whole (unpack(ARGV)), so which elements it needs is not known.
	Index int
	// Line is the 1-based line of the first such read.
	Line int
}

// String is "ARGV[2]", or "ARGV" for a read of Index 0.
func (in Input) String() string {
	if in.Index == 0 {
		return in.Table
	}
	return in.Table + "[" + strconv.Itoa(in.Index) + "]"
}

// FindInputs reads src statically for what it takes of KEYS and ARGV: one
// Input per table and literal index, at the line of its first read, KEYS
// before ARGV and each by index (a computed read, Index 0, first). Code
// only: comments and strings are left out, and so are fields of other
// tables (t.ARGV). A name that shadows KEYS or ARGV (local ARGV = ...) is
// not followed. An unlexable script gives the error.
func FindInputs(src string) ([]Input, error) {
	bodyAt := shebangEnd(src)
	toks, err := luaLex(src[bodyAt:], 1+strings.Count(src[:bodyAt], "\n"))
	if err != nil {
		return nil, err
	}
	first := map[Input]int{} // Line zero in the key: the first line of each
	for i, t := range toks {
		if t.kind != tokName || t.val != "KEYS" && t.val != "ARGV" {
			continue
		}
		if i > 0 && (toks[i-1].is(".") || toks[i-1].is(":")) {
			continue // a field of another table
		}
		in := Input{Table: t.val}
		if i+3 < len(toks) && toks[i+1].is("[") && toks[i+2].kind == tokNumber && toks[i+3].is("]") {
			if n, err := strconv.Atoi(toks[i+2].val); err == nil && n >= 1 {
				in.Index = n
			}
		}
		if _, seen := first[in]; !seen {
			first[in] = t.line
		}
	}
	out := make([]Input, 0, len(first))
	for _, table := range []string{"KEYS", "ARGV"} {
		var idx []int
		for in := range first {
			if in.Table == table {
				idx = append(idx, in.Index)
			}
		}
		slices.Sort(idx)
		for _, n := range idx {
			in := Input{Table: table, Index: n}
			in.Line = first[in]
			out = append(out, in)
		}
	}
	return out, nil
}
