package targets

import (
	"crypto/sha1" //nolint:gosec // Redis names scripts by their SHA-1: a name, not a protection
	"encoding/hex"
	"path/filepath"

	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/internal/input"
	"github.com/ratelab/ratelab/internal/redact"
	"github.com/ratelab/ratelab/measure"
)

// ScriptSHA1 is the hex SHA-1 of a script's text: the name Redis gives it
// (EVALSHA, SCRIPT LOAD); "" for no text.
func ScriptSHA1(src string) string {
	if src == "" {
		return ""
	}
	sum := sha1.Sum([]byte(src)) //nolint:gosec // a name
	return hex.EncodeToString(sum[:])
}

// Record is s as a verify.json records it (measure.TargetSpec): the
// built-in's name, the endpoint (its password hidden: an endpoint is
// never replayed), the exec adapter's command and directory, or the
// script's path and SHA-1 with its set-up's, its templates and its
// predicate as written.
func (s Spec) Record() *measure.TargetSpec {
	return &measure.TargetSpec{Name: s.Name, Algorithm: s.Algorithm, HTTP: redact.URL(s.HTTP), Exec: s.Exec, ExecDir: s.ExecDir,
		Script: s.Script, ScriptSHA1: ScriptSHA1(s.Source), FCall: s.FCall, Setup: s.Setup, SetupSHA1: ScriptSHA1(s.SetupSource),
		Keys: s.Keys, Args: s.Args, Allowed: s.AllowedExpr, AllowedWhen: s.AllowedWhen}
}

// FromRecord is the Spec of a recorded target (Record): its script and
// set-up read again from their paths (a relative path is tried as given,
// then relative to dir, the directory of the file that recorded it), and
// refused when their SHA-1 is not the recorded one: that is another
// script, not the target recorded. Errors name the field: "script",
// "setup" (unreadable or changed), "allowed" (a predicate that does not
// parse), "target" (no target at all).
func FromRecord(r *measure.TargetSpec, dir string) (Spec, error) {
	if r == nil || r.Algorithm == "" && r.HTTP == "" && r.Exec == "" && r.Script == "" {
		return Spec{}, field.Errorf("target", "none recorded (a verify.json of an older ratelab?)")
	}
	s := Spec{From: "", Name: r.Name, Algorithm: r.Algorithm, HTTP: r.HTTP, Exec: r.Exec, ExecDir: r.ExecDir, Keys: r.Keys, Args: r.Args, FCall: r.FCall,
		Allowed: custom.ReplyIs(1), AllowedExpr: r.Allowed, AllowedWhen: r.AllowedWhen}
	if r.Script == "" {
		return s, nil
	}
	var err error
	if s.Script, s.Source, err = readRecorded("script", r.Script, r.ScriptSHA1, dir); err != nil {
		return s, err
	}
	if r.Setup != "" {
		if s.Setup, s.SetupSource, err = readRecorded("setup", r.Setup, r.SetupSHA1, dir); err != nil {
			return s, err
		}
	}
	switch {
	case r.Allowed != "":
		if s.Allowed, err = custom.ParseReplyPredicate(r.Allowed); err != nil {
			return s, &field.Error{Name: "allowed", Err: err}
		}
	case r.AllowedWhen != nil:
		s.Allowed = custom.ReplyIs(*r.AllowedWhen)
	}
	if s.Name == "" {
		s.Name = filepath.Base(s.Script)
	}
	return s, nil
}

// readRecorded reads the script of field name recorded at path with
// SHA-1 sum (see FromRecord) and returns the path it was found at.
func readRecorded(name, path, sum, dir string) (string, string, error) {
	tries := []string{path}
	if !filepath.IsAbs(path) && dir != "" {
		tries = append(tries, filepath.Join(dir, path))
	}
	var firstErr error
	for _, p := range tries {
		b, err := input.ReadFile(p, input.MaxText)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if got := ScriptSHA1(string(b)); sum != "" && got != sum {
			return "", "", field.Errorf(name, "%s has changed since it was verified (SHA-1 %s, recorded %s): the replay runs exactly the target recorded; name the new script to replay the trace against it", p, got, sum)
		}
		return p, string(b), nil
	}
	return "", "", &field.Error{Name: name, Err: firstErr}
}
