package server

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/ratelab/ratelab/internal/redact"
)

// badURL is the error of spec, a Redis URL that did not parse with err:
// what names the URL ("bad Redis URL"), shown by redact.URL. The text of a
// parser's error may quote the URL or a piece of it (net/url quotes the
// whole URL, and the characters of a bad %-escape), so it is kept only
// when spec holds no '@', that is no password.
func badURL(what, spec string, err error) error {
	var esc url.EscapeError
	switch {
	case errors.As(err, &esc):
		return fmt.Errorf("%s %q: a %% that does not start a %%XX escape (write a %% in a password as %%25, and @ : / ? # as %%40 %%3A %%2F %%3F %%23)",
			what, redact.URL(spec))
	case strings.Contains(spec, "@"):
		return fmt.Errorf("%s %q: want redis://[user:password@]host:port[/db] (write @ : / ? # %% in a password as %%40 %%3A %%2F %%3F %%23 %%25)",
			what, redact.URL(spec))
	}
	return fmt.Errorf("%s %q: %w", what, spec, err)
}
