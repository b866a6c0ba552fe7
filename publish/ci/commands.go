package ci

import (
	"bytes"
	"io"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Neutral is a writer for a command's stdout or stderr on GitHub Actions,
// whose runner obeys every output line that starts, after white space,
// with "::" (a workflow command: ::error, ::add-mask::, ::stop-commands::)
// or "##[" (the older form). A name, a path, a Redis reply or a file's
// bytes can hold such a line; Neutral writes a backslash before the "::"
// or "##[" of every line it carries, so the runner shows it and obeys
// nothing. ratelab's own commands (the annotations) go through
// WriteCommands, unchanged.
//
// Lines end at LF or CR, as the runner splits them. A line is held until
// it ends, or until Flush: call Flush before the process ends. Safe for
// concurrent use.
type Neutral struct {
	mu   sync.Mutex
	w    io.Writer
	line []byte // the current line, not yet written: no LF or CR in it
}

// Neutralize returns w wrapped in a Neutral.
func Neutralize(w io.Writer) *Neutral { return &Neutral{w: w} }

// Write writes the lines of p that end in it, each neutralised, and holds
// the rest. It returns len(p) unless w fails.
func (n *Neutral) Write(p []byte) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	size := len(p)
	var out []byte
	for len(p) > 0 {
		i := bytes.IndexAny(p, "\r\n")
		if i < 0 {
			n.line = append(n.line, p...)
			break
		}
		n.line = append(n.line, p[:i+1]...)
		out = append(out, neutralLine(n.line)...)
		n.line, p = n.line[:0], p[i+1:]
	}
	if len(out) == 0 {
		return size, nil
	}
	if _, err := n.w.Write(out); err != nil {
		return 0, err
	}
	return size, nil
}

// Flush writes the line held, neutralised; errors are w's.
func (n *Neutral) Flush() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.flush()
}

func (n *Neutral) flush() error {
	if len(n.line) == 0 {
		return nil
	}
	out := neutralLine(n.line)
	n.line = n.line[:0]
	_, err := n.w.Write(out)
	return err
}

// WriteCommands writes p, lines of ratelab's own workflow commands,
// unchanged, on a line of their own: a line held is written first, ended.
func (n *Neutral) WriteCommands(p []byte) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.line) > 0 {
		n.line = append(n.line, '\n')
		if err := n.flush(); err != nil {
			return err
		}
	}
	_, err := n.w.Write(p)
	return err
}

// neutralLine is line with a backslash before a workflow command's "::"
// or "##[" that starts it after white space (the runner trims Unicode
// white space; invisible format characters are skipped too, to be safe).
func neutralLine(line []byte) []byte {
	rest := bytes.TrimLeftFunc(line, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError
	})
	if !bytes.HasPrefix(rest, []byte("::")) && !bytes.HasPrefix(rest, []byte("##[")) {
		return line
	}
	at := len(line) - len(rest)
	out := make([]byte, 0, len(line)+1)
	out = append(out, line[:at]...)
	out = append(out, '\\')
	return append(out, rest...)
}

// commandWriter is a writer that can carry ratelab's own workflow
// commands past a Neutral (Neutral, CountingWriter).
type commandWriter interface {
	WriteCommands(p []byte) error
}

// WriteCommands writes p, lines of ratelab's own workflow commands (its
// annotations), to w: unchanged through a Neutral, and through the
// writers of this package that wrap one. Errors are w's.
func WriteCommands(w io.Writer, p []byte) error {
	if cw, ok := w.(commandWriter); ok {
		return cw.WriteCommands(p)
	}
	_, err := w.Write(p)
	return err
}

// WriteCommands writes p through to W as ratelab's own workflow commands
// (WriteCommands), counted.
func (c *CountingWriter) WriteCommands(p []byte) error {
	if err := WriteCommands(c.W, p); err != nil {
		return err
	}
	c.N += int64(len(p))
	return nil
}
