//go:build unix

package azurite

import (
	"os"
	"syscall"
)

// terminate asks the process group led by p to stop.
func terminate(p *os.Process) error {
	return syscall.Kill(-p.Pid, syscall.SIGTERM)
}

// kill stops the process group led by p at once.
func kill(p *os.Process) error {
	return syscall.Kill(-p.Pid, syscall.SIGKILL)
}
