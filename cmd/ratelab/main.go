// Command ratelab compares Redis rate-limiting algorithms running as Lua
// scripts in a real Redis, and verifies their behaviour at window boundaries.
package main

import (
	"os"
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}
