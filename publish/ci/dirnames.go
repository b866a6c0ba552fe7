package ci

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxDirName is the most bytes of a target's directory name (DirNames),
// well under the 255 bytes file systems allow, leaving room for a number.
const maxDirName = 120

// DirNames makes the names of a suite's targets directory names, one per
// name in order, each a single path element inside the results directory
// and all different: '/', '\\', ':' and control characters become '_';
// a name that is empty or all dots ("..") and a leading dot (a hidden file,
// or one of ratelab's own ".ratelab-*") become '_'; names are cut to 120
// bytes; and a name met before, ignoring case (a case-insensitive file
// system), is numbered "-2", "-3", ... Safe for concurrent use.
func DirNames(names []string) []string {
	out := make([]string, len(names))
	used := map[string]bool{}
	for i, name := range names {
		base := dirName(name)
		d := base
		for n := 2; used[strings.ToLower(d)]; n++ {
			d = base + "-" + strconv.Itoa(n)
		}
		used[strings.ToLower(d)] = true
		out[i] = d
	}
	return out
}

// dirName is one name made a single path element (DirNames without the
// numbering).
func dirName(name string) string {
	s := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return '_'
		}
		return r
	}, name)
	if len(s) > maxDirName {
		cut := maxDirName
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	if strings.Trim(s, ".") == "" {
		return strings.Repeat("_", max(1, len(s)))
	}
	if s[0] == '.' {
		s = "_" + s[1:]
	}
	return s
}
