//go:build !unix

package azurite

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

// terminate stops the process: without process groups there is no gentler portable way.
func terminate(p *os.Process) error { return p.Kill() }

func kill(p *os.Process) error { return p.Kill() }
