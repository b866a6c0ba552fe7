// Package usercmd is ratelab's policy on the Redis commands a user's code
// may send: the calls of a client-side script (each one a real command
// sent from Go), of a script run under the guard's temporary ACL user, and
// of anything else ratelab forwards on a user's behalf. A rate limiter's
// decision needs the commands on its own keys (strings, hashes, sorted
// sets, TTLs, EVAL/EVALSHA, SCRIPT LOAD/EXISTS, TIME ...); it never needs
// to administer the server, change or read its Functions, log in as
// another user, reach another database, or list the server's keys.
//
// The policy has two faces that say the same: Check, which tells whether
// one command may be sent (ratelab asks it before the command leaves the
// process, on any Redis), and ACLRules, the rules of ACL SETUSER that make
// a user's Redis refuse the same commands to the guard's user (a script
// run inside Redis is checked by Redis, not by ratelab). Redis's ACL does
// not apply to AUTH, HELLO and RESET, so those are refused by Check alone;
// server-side scripts cannot call them.
//
// The package imports nothing of ratelab, so that every way a user's
// command reaches Redis can share it.
package usercmd

import (
	"slices"
	"strconv"
	"strings"
)

// Refusal is Check's error: Command is the command as it is named in
// messages ("FUNCTION LOAD", "SCAN"), Reason why it may not be sent ("it
// would change the Functions on your Redis").
type Refusal struct {
	Command string
	Reason  string
}

// Error renders "FUNCTION LOAD: not allowed (it would ...)".
func (r *Refusal) Error() string { return r.Command + ": not allowed (" + r.Reason + ")" }

// Reasons, one per kind of refused command.
const (
	reasonFunctions = "it would change or read the Functions on your Redis"
	reasonScripts   = "it would flush, kill or debug the scripts of every client of your Redis"
	reasonLogin     = "it would log the connection in as another user, out of the guard's limits"
	reasonDatabase  = "it reaches another database or every key of one"
	reasonKeyNames  = "it lists the names of keys that are not the trial's"
	reasonPubSub    = "it reaches the Pub/Sub channels of your applications"
	reasonTracking  = "it would report the names of keys other clients change"
	reasonAdmin     = "it administers the server, or could harm it or read beyond the trial's keys (Redis files it under @admin or @dangerous)"
)

// refused are the commands refused whole, by lower-case name, with why.
// Each also becomes a deny rule of ACLRules, except the login commands
// (Redis's ACL does not apply to them).
var refused = map[string]string{
	"function": reasonFunctions,
	"auth":     reasonLogin, "reset": reasonLogin,
	"select": reasonDatabase, "swapdb": reasonDatabase, "move": reasonDatabase, "migrate": reasonDatabase,
	"copy": reasonDatabase, "flushdb": reasonDatabase, "flushall": reasonDatabase,
	"scan": reasonKeyNames, "keys": reasonKeyNames, "randomkey": reasonKeyNames,
	"publish": reasonPubSub, "spublish": reasonPubSub, "subscribe": reasonPubSub, "psubscribe": reasonPubSub,
	"ssubscribe": reasonPubSub, "pubsub": reasonPubSub,
}

// notInACL are the refused commands Redis's ACL does not check (it lets
// every user run them, to log in).
var notInACL = map[string]bool{"auth": true, "reset": true, "hello": true}

// refusedSub are subcommands refused, "command|subcommand" in lower case,
// besides the @admin and @dangerous ones: each also becomes a deny rule of
// ACLRules.
var refusedSub = map[string]string{
	"script|flush": reasonScripts, "script|kill": reasonScripts, "script|debug": reasonScripts,
	"client|tracking":       reasonTracking,
	"cluster|getkeysinslot": reasonKeyNames,
}

// admin are the commands and subcommands Redis 7 files under @admin or
// @dangerous (ACL CAT admin, ACL CAT dangerous), but INFO: ACLRules denies
// them by category, and Check by this list. A command listed alone is
// refused with every subcommand (CONFIG, LATENCY, MODULE, SLOWLOG, ACL:
// all of them but HELP and a few readers are in the categories; a
// limiter needs none).
var admin = map[string]bool{
	"acl": true, "bgrewriteaof": true, "bgsave": true, "config": true, "debug": true, "failover": true,
	"lastsave": true, "latency": true, "module": true, "monitor": true, "pfdebug": true, "pfselftest": true,
	"psync": true, "replconf": true, "replicaof": true, "restore": true, "restore-asking": true, "role": true,
	"save": true, "shutdown": true, "slaveof": true, "slowlog": true, "sort": true, "sort_ro": true, "sync": true,
	"client|kill": true, "client|list": true, "client|no-evict": true, "client|pause": true, "client|unblock": true,
	"client|unpause":   true,
	"cluster|addslots": true, "cluster|addslotsrange": true, "cluster|bumpepoch": true,
	"cluster|count-failure-reports": true, "cluster|delslots": true, "cluster|delslotsrange": true,
	"cluster|failover": true, "cluster|flushslots": true, "cluster|forget": true, "cluster|meet": true,
	"cluster|replicas": true, "cluster|replicate": true, "cluster|reset": true, "cluster|saveconfig": true,
	"cluster|set-config-epoch": true, "cluster|setslot": true, "cluster|slaves": true,
}

// onlySub are the only subcommands allowed of a command whose others are
// all refused, with why: SCRIPT LOAD and EXISTS are what a client library
// sends around EVALSHA.
var onlySub = map[string]struct {
	allowed map[string]bool
	reason  string
}{
	"script": {map[string]bool{"load": true, "exists": true, "help": true}, reasonScripts},
}

// containers are the commands whose first argument is a subcommand, for
// naming the command in a Refusal.
var containers = map[string]bool{
	"acl": true, "client": true, "cluster": true, "command": true, "config": true, "function": true,
	"latency": true, "memory": true, "module": true, "object": true, "pubsub": true, "script": true,
	"slowlog": true, "xgroup": true, "xinfo": true,
}

// Check returns nil when a user's code may send args (a command's name
// and its arguments, as sent), else a *Refusal naming the command. It
// looks at the command's name, its subcommand, and HELLO's options (HELLO
// may switch the protocol or set a name, never log in: AUTH). An empty
// args, or a command Redis does not know, is left to Redis to answer.
// Safe for concurrent use.
func Check(args []string) error {
	if len(args) == 0 {
		return nil
	}
	name := strings.ToLower(args[0])
	sub := ""
	if len(args) > 1 {
		sub = strings.ToLower(args[1])
	}
	refuse := func(reason string) error { return &Refusal{Command: display(args), Reason: reason} }
	if r, ok := refused[name]; ok {
		return refuse(r)
	}
	if admin[name] {
		return refuse(reasonAdmin)
	}
	if name == "hello" {
		return checkHello(args)
	}
	if !containers[name] || sub == "" {
		return nil
	}
	if r, ok := refusedSub[name+"|"+sub]; ok {
		return refuse(r)
	}
	if admin[name+"|"+sub] {
		return refuse(reasonAdmin)
	}
	if only, ok := onlySub[name]; ok && !only.allowed[sub] {
		return refuse(only.reason)
	}
	return nil
}

// checkHello refuses HELLO with AUTH: HELLO [protover [AUTH user pass]
// [SETNAME name]].
func checkHello(args []string) error {
	for i := 2; i < len(args); i++ {
		switch strings.ToLower(args[i]) {
		case "auth":
			return &Refusal{Command: "HELLO AUTH", Reason: reasonLogin}
		case "setname":
			i++ // its value is a name, whatever it spells
		}
	}
	return nil
}

// display names the command of args for a message: its name in upper
// case, with the subcommand of a container; a word that is not a plain
// token is quoted and cut to 40 bytes.
func display(args []string) string {
	s := word(args[0])
	if containers[strings.ToLower(args[0])] && len(args) > 1 {
		s += " " + word(args[1])
	}
	return s
}

func word(w string) string {
	plain := len(w) <= 40
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			plain = false
			break
		}
	}
	if plain && w != "" {
		return strings.ToUpper(w)
	}
	if len(w) > 40 {
		w = w[:40]
	}
	return strconv.Quote(w)
}

// ACLRules are the rules of ACL SETUSER (after the user's name, password
// and key patterns) that give a user every command Check allows and none
// of those it refuses that Redis's ACL checks: every command, less
// @dangerous and @admin (but INFO), less the commands and subcommands
// Check refuses besides, and no Pub/Sub channel. The deny rules of a
// command or subcommand a server does not know (FUNCTION before Redis 7,
// COPY before 6.2) or cannot take (a subcommand denied before Redis 7)
// may be dropped by the caller: a server-side script cannot call SCRIPT,
// FUNCTION or CLIENT, and a client-side call is checked by Check. A new
// slice each call; its order is stable.
func ACLRules() []string {
	rules := []string{"resetchannels", "+@all", "-@dangerous", "-@admin", "+info"}
	rules = append(rules, DenyRules()...)
	return rules
}

// DenyRules are ACLRules' rules that deny one command or subcommand
// ("-function", "-script|flush"), sorted: the ones a caller may drop on a
// server that does not know them.
func DenyRules() []string {
	var out []string
	for name := range refused {
		if !notInACL[name] {
			out = append(out, "-"+name)
		}
	}
	for cmd := range refusedSub {
		out = append(out, "-"+cmd)
	}
	slices.Sort(out)
	return out
}
