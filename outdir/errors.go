package outdir

import "errors"

// WriteError is the error of creating or writing a command's files (the
// results directory, a results file, the decision file), as opposed to
// the error of what the command measured. Its text is Err's; errors.As
// and errors.Is see through it to Err.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return e.Err.Error() }

func (e *WriteError) Unwrap() error { return e.Err }

// WriteFailed is err as a *WriteError; nil for nil.
func WriteFailed(err error) error {
	if err == nil {
		return nil
	}
	return &WriteError{Err: err}
}

// Join is err with werr's *WriteError joined (errors.Join); either alone
// when the other is nil, unwrapped, so that a lone error is itself.
func Join(err, werr error) error {
	werr = WriteFailed(werr)
	switch {
	case werr == nil:
		return err
	case err == nil:
		return werr
	}
	return errors.Join(err, werr)
}

// Split takes Join's error apart: run is what is not a *WriteError (nil
// when nothing), werr the *WriteError's Err (nil when none). An error
// that is no join and no *WriteError is all run.
func Split(err error) (run, werr error) {
	var we *WriteError
	if errors.As(err, &we) && error(we) == err {
		return nil, we.Err
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err, nil
	}
	var runs []error
	for _, e := range j.Unwrap() {
		if w, ok := e.(*WriteError); ok && werr == nil {
			werr = w.Err
		} else {
			runs = append(runs, e)
		}
	}
	if werr == nil {
		return err, nil
	}
	if len(runs) == 1 {
		return runs[0], werr
	}
	return errors.Join(runs...), werr
}
