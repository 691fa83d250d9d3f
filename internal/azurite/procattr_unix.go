//go:build unix && !linux

package azurite

import "syscall"

// sysProcAttr puts Azurite in its own process group so that Close can signal it and any
// children at once. There is no Pdeathsig outside Linux (FreeBSD aside).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
