package execlimiter

import "syscall"

// sysProcAttr puts an adapter in a process group of its own (so that it
// and whatever it starts are killed together, and a Ctrl-C at the
// terminal reaches ratelab alone) and has the kernel kill it when
// ratelab dies without a chance to (kill -9).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
