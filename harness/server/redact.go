package server

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// RedactURL is s, a Redis URL as the user gave it, with its password
// hidden: the one form in which ratelab shows a URL, in messages, reports
// and files. Everything between "://" (or the start, when s has none) and
// the last '@' is taken for the user and password, so that a password
// holding '@', ':', '/', '?', '#' or '%', percent-encoded or not, is
// hidden whole; the part after the first ':' becomes "xxxxx", and without
// a ':' the whole of it does (redis-cli reads "redis://secret@host" as a
// password). s is not parsed: a URL that does not parse is hidden alike.
// A string without '@' is returned as it is.
func RedactURL(s string) string {
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return s
	}
	start := 0
	if i := strings.Index(s, "://"); i >= 0 && i < at {
		start = i + len("://")
	}
	if user, _, ok := strings.Cut(s[start:at], ":"); ok {
		return s[:start] + user + ":xxxxx" + s[at:]
	}
	return s[:start] + "xxxxx" + s[at:]
}

// badURL is the error of spec, a Redis URL that did not parse with err:
// what names the URL ("bad Redis URL"), shown by RedactURL. The text of a
// parser's error may quote the URL or a piece of it (net/url quotes the
// whole URL, and the characters of a bad %-escape), so it is kept only
// when spec holds no '@', that is no password.
func badURL(what, spec string, err error) error {
	var esc url.EscapeError
	switch {
	case errors.As(err, &esc):
		return fmt.Errorf("%s %q: a %% that does not start a %%XX escape (write a %% in a password as %%25, and @ : / ? # as %%40 %%3A %%2F %%3F %%23)",
			what, RedactURL(spec))
	case strings.Contains(spec, "@"):
		return fmt.Errorf("%s %q: want redis://[user:password@]host:port[/db] (write @ : / ? # %% in a password as %%40 %%3A %%2F %%3F %%23 %%25)",
			what, RedactURL(spec))
	}
	return fmt.Errorf("%s %q: %w", what, spec, err)
}
