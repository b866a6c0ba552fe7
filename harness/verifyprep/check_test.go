package verifyprep

import (
	"errors"
	"testing"
	"time"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/targets"
)

// Check takes the caller's limits unless only the target file has some,
// and says whose limits were wrong: a field error for the caller's, a
// *FileError for the file's; a setting is never the file's.
func TestCheck(t *testing.T) {
	base := verify.Config{Clients: 8, Timeout: time.Second, MaxOutage: time.Second, Seed: 1}
	ten := []limit.Limit{{Count: 10, Window: time.Second}}
	two := []limit.Limit{{Count: 10, Window: time.Second}, {Count: 100, Window: time.Minute}}
	fw := targets.Spec{Algorithm: "fixed-window"}
	fileFW := targets.Spec{Algorithm: "fixed-window", From: "ratelab.yaml", Limits: two}
	for _, c := range []struct {
		name      string
		spec      targets.Spec
		ls        Limits
		wantLimit int    // limits in the Config, when no error
		wantField string // the field error's name, "" for none
		wantFile  bool   // the error is a *FileError
	}{
		{"given", fw, Limits{Given: ten, Gave: true, Precision: time.Millisecond}, 1, "", false},
		{"none", fw, Limits{}, 0, "limit", false},
		{"no count", fw, Limits{Given: []limit.Limit{{Window: time.Second}}, Gave: true}, 0, "limit", false},
		{"file's, bad window", targets.Spec{Algorithm: "fixed-window", From: "ratelab.yaml", Limits: []limit.Limit{{Count: 10}}}, Limits{}, 0, "window", true},
		{"file's, too many", fileFW, Limits{}, 0, "limits", true},
		{"given over the file's", fileFW, Limits{Given: ten, Gave: true}, 1, "", false},
		{"given, too many", fw, Limits{Given: two, Gave: true}, 0, "limits", false},
		{"bucketed-hash: several", targets.Spec{Algorithm: "bucketed-hash"}, Limits{Given: two, Gave: true}, 2, "", false},
	} {
		p, err := Check(base, c.spec, c.ls)
		cfg := p.Config
		name, _ := field.Name(err)
		var fe *FileError
		if name != c.wantField || errors.As(err, &fe) != c.wantFile {
			t.Errorf("%s: error %v (field %q), want field %q, file %v", c.name, err, name, c.wantField, c.wantFile)
			continue
		}
		if fe != nil && fe.File != "ratelab.yaml" {
			t.Errorf("%s: file %q", c.name, fe.File)
		}
		if err != nil {
			continue
		}
		if len(cfg.Limits) != c.wantLimit || cfg.Limits[0].Precision != c.ls.Precision || cfg.TargetSHA256 != c.spec.Digest() || p.Spec.Algorithm != c.spec.Algorithm {
			t.Errorf("%s: got %+v", c.name, cfg)
		}
	}
}

// A setting the file does not give is the caller's error, even when the
// limits are the file's.
func TestCheckSetting(t *testing.T) {
	spec := targets.Spec{Algorithm: "fixed-window", From: "ratelab.yaml", Limits: []limit.Limit{{Count: 10, Window: time.Second}}}
	_, err := Check(verify.Config{Skew: time.Second}, spec, Limits{})
	if name, _ := field.Name(err); name != "skew" || errors.As(err, new(*FileError)) {
		t.Errorf("got %v (field %q), want a field error naming skew, not the file's", err, name)
	}
}
