// Package vclock puts Lua scripts for Redis on a virtual clock: one emitter
// (Rewrite) rewrites a script's source, keeping its line numbers, so that
// its TIME answers a time the caller passes (Options.Time) and its keys
// expire at that time rather than on Redis's clock (Options.Expiry, in a
// full or a lean form). RewriteLibrary does the same, with the same
// emitter, for a function library (FUNCTION LOAD, FCALL), and may rename
// the library and its functions; RenameLibrary only renames, and
// LibraryFunctions reads the functions a library registers. It holds the
// small Lua lexer and call-site finder the rewrites need, and
// FindAbsoluteExpiries, which reads the same tokens.
//
// The package knows nothing of limiters: algorithms builds its calls with
// it. Everything here is safe for concurrent use.
package vclock
