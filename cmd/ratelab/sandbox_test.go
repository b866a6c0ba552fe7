package main

// sandboxLib is a user's Function library on the victim of the sandbox
// tests: FCALL sandboxfn answers "user".
const sandboxLib = "#!lua name=sandboxlib\nredis.register_function('sandboxfn', function() return 'user' end)"

func slicesContains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
