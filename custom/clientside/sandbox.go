package clientside

// The sandbox a script runs in: the globals of a Redis 7.0 script and no
// more (nothing that reads files, loads code or writes to ratelab's
// stdout), a global table that raises on a missing name as Redis does,
// and the string functions whose work is bounded (patterns, string.rep,
// string.format, table.concat and the .. operator: see strlib.go).

import (
	"runtime/metrics"

	lua "github.com/yuin/gopher-lua"
)

// removedGlobals are the names gopher-lua's base library defines that a
// Redis 7.0 script does not have: files (dofile, loadfile), code loading
// (load, loadstring, require, module), output (print, _printregs),
// environments (getfenv, setfenv), newproxy and gopher-lua's version.
var removedGlobals = []string{
	"dofile", "loadfile", "load", "loadstring", "require", "module",
	"print", "_printregs", "getfenv", "setfenv", "newproxy", "_GOPHER_LUA_VERSION",
}

// newState is a Lua state with the libraries of a Redis script: base
// (without removedGlobals), table, string and math; string.find, match,
// gmatch, gsub, rep, format and table.concat replaced by bounded ones,
// and the global table's metatable raising on a missing name.
func newState() *lua.LState {
	// the data stack does not grow past 5120 slots: string.byte(s, 1, -1)
	// or unpack over a huge range fails ("registry overflow") as Lua 5.1's
	// "string slice too long" does, instead of allocating per element
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	for _, n := range removedGlobals {
		g.RawSetString(n, lua.LNil)
	}
	g.RawSetString("collectgarbage", L.NewFunction(collectGarbage))
	str := L.GetGlobal("string").(*lua.LTable) // the strings' metatable indexes this table too
	L.SetFuncs(str, map[string]lua.LGFunction{
		"find": strFind, "match": strMatch, "gmatch": strGmatch, "gsub": strGsub,
		"rep": strRep, "format": strFormat(str.RawGetString("format")),
	})
	L.GetGlobal("table").(*lua.LTable).RawSetString("concat", L.NewFunction(tableConcat))
	meta := L.NewTable()
	meta.RawSetString("__index", L.NewFunction(missingGlobal))
	L.SetMetatable(g, meta)
	return L
}

// concatGlobal names the function every .. of a script calls (see
// rewriteConcat); no Lua identifier can spell it. Run sets it before
// each run, and the chunk copies it into a local before the script's
// first statement, so a script cannot replace it.
const concatGlobal = "(concat)"

// missingGlobal is the global table's __index: reading a global that does
// not exist is an error, with Redis's wording.
func missingGlobal(L *lua.LState) int {
	name := L.Get(2)
	L.RaiseError("Script attempted to access nonexistent global variable '%s'", lua.LVAsString(name))
	return 0
}

// collectGarbage is Lua 5.1's collectgarbage without forcing a collection
// (Go's collector runs on its own; a script calling it in a loop would
// stall every goroutine): "count" is the process's Go heap in KB, every
// other option returns 0.
func collectGarbage(L *lua.LState) int {
	if L.OptString(1, "collect") == "count" {
		L.Push(lua.LNumber(float64(heapBytes()) / 1024))
		return 1
	}
	L.Push(lua.LNumber(0))
	return 1
}

// heapMetric is the Go heap in use by objects (live and not yet swept).
const heapMetric = "/memory/classes/heap/objects:bytes"

// heapBytes reads heapMetric (no stop of the world).
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
