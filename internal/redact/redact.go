// Package redact hides secrets in what ratelab shows: URL is the one
// function every URL goes through before it is printed or written.
package redact

import "strings"

// URL is s, a Redis URL as the user gave it, with its password
// hidden: the one form in which ratelab shows a URL (a Redis URL, an HTTP
// endpoint), in messages, reports and files. Everything between "://" (or the start, when s has none) and
// the last '@' is taken for the user and password, so that a password
// holding '@', ':', '/', '?', '#' or '%', percent-encoded or not, is
// hidden whole; the part after the first ':' becomes "xxxxx", and without
// a ':' the whole of it does (redis-cli reads "redis://secret@host" as a
// password). s is not parsed: a URL that does not parse is hidden alike.
// A string without '@' is returned as it is.
func URL(s string) string {
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
