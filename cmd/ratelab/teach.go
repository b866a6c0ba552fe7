package main

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/field"
)

// teachError is err, a script's first call failing, as a usage error that
// teaches (custom.InputsError): the flag to give (--arg, --key or
// --allowed) with the reason, what the script reads, line by line, the
// templates' placeholders, and c's command line as given with the
// missing templates added, as an example. Nil when err carries no
// InputsError.
func teachError(c *cobra.Command, err error) error {
	var ie *custom.InputsError
	if !errors.As(err, &ie) {
		return nil
	}
	name, _ := field.Name(err)
	flag, _ := flagOf(c.Flags(), name)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n  its first call: %s", flag, ie.Need(), ie.Cause())
	if len(ie.Reads) > 0 {
		fmt.Fprintf(&b, "\n  what %s reads of KEYS and ARGV (a static read of its code):", ie.Name)
		for _, r := range ie.Reads {
			fmt.Fprintf(&b, "\n    %-8s line %-3d %s", r.Input, r.Line, r.Code)
		}
	}
	if name == "allowed" {
		b.WriteString("\n  --allowed says which reply means allowed, an expression over reply and the placeholders:" +
			"\n  reply == 1 (the default), reply != nil (Lua false denies), reply <= limit, reply[2] >= 0," +
			"\n  reply in [1, 2]; --allowed-when N: the reply, or its first element, is N")
		fmt.Fprintf(&b, "\n  for example:\n    %s", example(c, map[string][]string{"allowed": {"reply != nil"}}))
		return usageError{&reworded{b.String(), err}}
	}
	ph := make([]string, len(custom.Placeholders))
	for i, p := range custom.Placeholders {
		ph[i] = "{" + p + "}"
	}
	b.WriteString("\n  each --key is KEYS[i] (default one, {key}) and each --arg ARGV[i], in order: templates of" +
		"\n  the placeholders " + strings.Join(ph[:6], " ") +
		"\n  " + strings.Join(ph[6:], " ") + ", or expressions over them ({floor(now_ms / window_ms)})")
	keys, args := filled(ie)
	fix := map[string][]string{"arg": args}
	if len(ie.Keys) != 1 || ie.Keys[0] != "{key}" || len(keys) > 1 {
		fix["key"] = keys
	}
	fmt.Fprintf(&b, "\n  for example (templates guessed from the script's names: check the units it expects):\n    %s", example(c, fix))
	return usageError{&reworded{b.String(), err}}
}

// filled is ie's KEYS and ARGV templates with each element the script
// reads past them added: the template its names suggest, else a marker
// "<ARGV[n]>" to replace.
func filled(ie *custom.InputsError) (keys, args []string) {
	keys, args = slices.Clone(ie.Keys), slices.Clone(ie.Args)
	if len(keys) == 0 {
		keys = []string{"{key}"}
	}
	for _, r := range ie.Missing {
		if r.Index == 0 {
			continue // a computed read: how many it takes is the user's to say
		}
		list := &args
		if r.Table == "KEYS" {
			list = &keys
		}
		for len(*list) < r.Index-1 {
			*list = append(*list, fmt.Sprintf("<%s[%d]>", r.Table, len(*list)+1))
		}
		t := r.Suggest
		switch {
		case r.Table == "KEYS" && r.Index > 1:
			t = fmt.Sprintf("{key}:%d", r.Index)
		case t == "":
			t = "<" + r.Input.String() + ">"
		}
		*list = append(*list, t)
	}
	return keys, args
}

// exampleFirst are the flags an example command line puts first, in
// this order: the target, its templates, the limit.
var exampleFirst = []string{"script", "config", "key", "arg", "allowed", "allowed-when", "limit", "window"}

// example is c's command line as the user gave it (its changed flags),
// the flags of fix given fix's values instead (added when not given):
// "ratelab verify --script mine.lua --arg '{limit}' --limit 10 --window 1m".
func example(c *cobra.Command, fix map[string][]string) string {
	parts := []string{c.CommandPath()}
	add := func(f *pflag.Flag) {
		vals, ok := fix[f.Name]
		switch {
		case ok:
		case f.Value.Type() == "bool":
			parts = append(parts, "--"+f.Name)
			return
		default:
			if sv, isList := f.Value.(pflag.SliceValue); isList {
				vals = sv.GetSlice()
			} else {
				vals = []string{f.Value.String()}
			}
		}
		for _, v := range vals {
			parts = append(parts, "--"+f.Name, shellQuote(v))
		}
	}
	fs := c.Flags()
	for _, n := range exampleFirst {
		if f := fs.Lookup(n); f != nil && (f.Changed || fix[n] != nil) {
			add(f)
		}
	}
	fs.Visit(func(f *pflag.Flag) {
		if !slices.Contains(exampleFirst, f.Name) {
			add(f)
		}
	})
	return strings.Join(parts, " ")
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:=,+-]+$`)

// shellQuote is s as one word of a POSIX shell: as it is when safe, else
// in single quotes.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
