package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/targets"
)

// targetFlags name the limiters a command drives: for verify one target,
// a built-in --algorithm, a user's --script with its --key and --arg
// templates and its --allowed predicate, an --http endpoint, or a --config
// file describing one of these; for run, capacity and bench any number of
// --script (sharing --key, --arg, --allowed) and --config targets, beside
// the built-ins of --algorithms.
type targetFlags struct {
	many        bool // run, capacity, bench
	algorithm   string
	script      string   // verify's one --script
	scripts     []string // run's, capacity's, bench's
	keys        []string
	args        []string
	allowed     string
	allowedWhen int64
	http        string
	configs     []string
	specs       []targets.Spec // read by load
	trust       bool           // --trust-script
	guarded     redis.Scripter // the scripts' connection under guard (see guard); nil: the command's own
}

const templateHelp = `templates: {key} {now_us} {now_ms} {now_s} {window_us} {window_ms} {window_s} {limit} {cost} {request_id}, or expressions such as {floor(now_ms / window_ms)}`

// add declares verify's target flags on c.
func (t *targetFlags) add(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&t.algorithm, "algorithm", "", "a built-in algorithm: "+strings.Join(algorithms.Names(), ", "))
	fl.StringVar(&t.script, "script", "", "a Lua file to verify (KEYS from --key, ARGV from --arg)")
	fl.StringVar(&t.http, "http", "", "an HTTP endpoint to verify (GET; 2xx allowed, 429 denied)")
	fl.StringArrayVar(&t.configs, "config", nil, "a target file (ratelab.yaml: script, keys, args, allowed, limits; docs/config.md)")
	t.addScriptFlags(c)
}

// addMany declares the target flags of run, capacity and bench on c.
func (t *targetFlags) addMany(c *cobra.Command) {
	t.many = true
	fl := c.Flags()
	fl.StringArrayVar(&t.scripts, "script", nil, "a Lua file to add beside the built-ins, named by its file, repeatable (all share --key, --arg, --allowed)")
	fl.StringArrayVar(&t.configs, "config", nil, "a target file to add beside the built-ins (ratelab.yaml; docs/config.md), repeatable")
	t.addScriptFlags(c)
}

func (t *targetFlags) addScriptFlags(c *cobra.Command) {
	fl := c.Flags()
	fl.StringArrayVar(&t.keys, "key", nil, "a KEYS template for --script, repeatable, in order; must start with {key} (default one key: {key}); "+templateHelp)
	fl.StringArrayVar(&t.args, "arg", nil, "an ARGV template for --script, repeatable, in order; "+templateHelp)
	fl.StringVar(&t.allowed, "allowed", "", "when the --script reply means allowed: an expression over reply (nil for Lua false; arrays from 1) and the placeholders, e.g. 'reply != nil', 'reply <= limit', 'reply[2] >= 0', 'reply in [1, 2]'")
	fl.BoolVar(&t.trust, "trust-script", false, "on your own Redis, let the --script touch any key and run any command (default: it runs as a temporary ACL user limited to this run's keys)")
	fl.Int64Var(&t.allowedWhen, "allowed-when", 1, "shorthand for --allowed: the --script reply integer (or first element) that means allowed (0 for scripts that return 1 when over the limit)")
}

// check enforces the command-line rules, before any file is read: one
// target for verify, a known algorithm, the script flags only with
// --script, --allowed or --allowed-when.
func (t *targetFlags) check(c *cobra.Command) error {
	changed := c.Flags().Changed
	if !t.many {
		n := len(t.configs)
		for _, s := range []string{t.algorithm, t.script, t.http} {
			if s != "" {
				n++
			}
		}
		if n != 1 {
			return usagef("give exactly one of --algorithm, --script or --http (or a --config file)")
		}
		if t.algorithm != "" {
			if err := algorithms.CheckNames([]string{t.algorithm}); err != nil {
				return usagef("--algorithm: %w", err)
			}
		}
	}
	if t.script == "" && len(t.scripts) == 0 && (len(t.args) > 0 || len(t.keys) > 0 || changed("allowed") || changed("allowed-when")) {
		return usagef("--key, --allowed, --arg and --allowed-when go with --script (a --config file has its own keys, args and allowed)")
	}
	if changed("allowed") && changed("allowed-when") {
		return usagef("--allowed: give --allowed or --allowed-when, not both")
	}
	return nil
}

// load reads the --script files and the --config files (before any Redis
// is opened) and checks every template and predicate.
func (t *targetFlags) load() error {
	allowed := algorithms.ReplyIs(t.allowedWhen)
	if t.allowed != "" {
		p, err := algorithms.ParseReplyPredicate(t.allowed)
		if err != nil {
			return usagef("--allowed: %w", err)
		}
		allowed = p
	}
	scripts := t.scripts
	if t.script != "" {
		scripts = []string{t.script}
	}
	for _, path := range scripts {
		b, err := os.ReadFile(path)
		if err != nil {
			return usagef("--script: %w", err)
		}
		t.specs = append(t.specs, targets.Spec{From: "--script", Name: filepath.Base(path), Script: path, Source: string(b),
			Keys: t.keys, Args: t.args, Allowed: allowed})
	}
	for _, path := range t.configs {
		s, err := targets.ReadFile(path)
		if err != nil {
			return usagef("--config: %w", err)
		}
		if t.many && s.Script == "" {
			return usagef("--config %s: only a script can stand beside the built-ins here (an algorithm is one of --algorithms)", path)
		}
		t.specs = append(t.specs, s)
	}
	if t.algorithm != "" || t.http != "" {
		t.specs = append(t.specs, targets.Spec{Algorithm: t.algorithm, HTTP: t.http})
	}
	if t.many && len(t.specs) > 0 {
		// the templates are checked once here, with the flags' names
		if err := targets.Check(t.targets()); err != nil {
			return usagef("--script: %w", errors.Unwrap(err))
		}
	}
	for _, s := range t.specs {
		if s.Script != "" {
			if _, err := buildTarget(s, nil, limit.Limit{Count: 1, Window: time.Second}); err != nil {
				return err
			}
		}
	}
	return nil
}

// fileLimits returns the limits of a --config file; nil when none.
func (t *targetFlags) fileLimits() []limit.Limit {
	for _, s := range t.specs {
		if len(s.Limits) > 0 {
			return s.Limits
		}
	}
	return nil
}

// scriptFlagOf maps algorithms.ScriptConfig's fields to the flags.
var scriptFlagOf = map[string]string{"keys": "--key", "args": "--arg", "allowed": "--allowed"}

// targets returns the scripts as harness targets (run, capacity, bench).
func (t *targetFlags) targets() []targets.Target {
	out := make([]targets.Target, len(t.specs))
	for i, s := range t.specs {
		var digest string
		if s.Source != "" {
			digest = sha256Hex(s.Source)
		}
		out[i] = targets.Target{Name: s.Name, SHA256: digest, New: func(rdb redis.Scripter, l limit.Limit) (algorithms.Limiter, error) {
			if t.guarded != nil && s.Script != "" {
				rdb = t.guarded
			}
			return buildTarget(s, rdb, l)
		}}
	}
	return out
}

// digest is the hex SHA-256 of each loaded script, in order, joined by
// "," (verify has one); empty for a built-in or --http target.
func (t *targetFlags) digest() string {
	var ds []string
	for _, s := range t.specs {
		if s.Source != "" {
			ds = append(ds, sha256Hex(s.Source))
		}
	}
	return strings.Join(ds, ",")
}

// sha256Hex is the hex SHA-256 of s.
func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// usesRedis reports whether verify's target runs in Redis (all but --http).
func (t *targetFlags) usesRedis() bool { return len(t.specs) == 0 || t.specs[0].HTTP == "" }

// scriptName is verify's --script or the file's script, for errors ("").
func (t *targetFlags) scriptName() string {
	if len(t.specs) == 0 {
		return ""
	}
	return t.specs[0].Script
}

// limiter builds verify's target for the limits ls on rd (nil for --http),
// after load, through targets.Spec.Build (several limits: bucketed-hash
// enforcing them all, a script or an endpoint; else refused). Precision
// reaches bucketed-hash only. Errors are usage errors naming the flag.
func (t *targetFlags) limiter(rd *server.Redis, ls ...limit.Limit) (algorithms.Limiter, error) {
	if len(t.specs) != 1 {
		return nil, fmt.Errorf("no target loaded")
	}
	var rdb redis.Scripter
	if rd != nil {
		rdb = rd.Client
	}
	if t.guarded != nil && t.specs[0].Script != "" {
		rdb = t.guarded
	}
	return buildTarget(t.specs[0], rdb, ls...)
}

// targetFlagOf maps the Configs' "targets" field to its flag.
var targetFlagOf = map[string]string{"targets": "--script"}

// buildTarget builds s for the limits ls on rdb (targets.Spec.Build) with
// errors naming the flag, or the target file and its field.
func buildTarget(s targets.Spec, rdb redis.Scripter, ls ...limit.Limit) (algorithms.Limiter, error) {
	lim, err := s.Build(rdb, ls...)
	if err == nil {
		return lim, nil
	}
	if name, ok := field.Name(err); ok && s.From != "--script" && s.Script != "" {
		return nil, usagef("--config %s: %s: %w", s.From, name, errors.Unwrap(err))
	}
	return nil, flagError(err, scriptFlagOf)
}
