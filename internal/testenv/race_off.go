//go:build !race

package testenv

const raceEnabled = false
