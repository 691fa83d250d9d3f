//go:build linux

package azurite

import "syscall"

// sysProcAttr puts Azurite in its own process group (so that Close can signal it and any
// children at once) and asks the kernel to kill it when the thread that started it dies.
// Go's runtime never ends an OS thread whose goroutine is not locked to it, so in practice
// this fires when the whole process dies, e.g. a test binary killed by `go test -timeout`.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
