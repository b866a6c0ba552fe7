//go:build !linux

package execlimiter

import "syscall"

// sysProcAttr puts an adapter in a process group of its own, so that it
// and whatever it starts are killed together.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
