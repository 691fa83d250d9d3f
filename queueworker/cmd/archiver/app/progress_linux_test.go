package app

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/patterns/tablearchive"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal and returns its controlling side and the terminal.
func openPTY(t *testing.T) (control, tty *os.File) {
	t.Helper()
	control, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("a pseudo-terminal is needed to test terminal output: %v", err)
	}
	t.Cleanup(func() { control.Close() })
	if err := unix.IoctlSetPointerInt(int(control.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(control.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return control, tty
}

// The reporter of -progress writes human lines when stderr is a terminal, and logs (not
// lines) when it is a file or a pipe.
func TestProgressChoosesTheTerminal(t *testing.T) {
	t.Parallel()
	control, tty := openPTY(t)
	if !isTerminal(tty) {
		t.Fatal("a pseudo-terminal is not a terminal")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for _, f := range []*os.File{w, null} {
		if isTerminal(f) {
			t.Fatalf("%s is taken for a terminal", f.Name())
		}
	}
	if isTerminal(&lockedBuilder{}) {
		t.Fatal("a buffer is taken for a terminal")
	}

	f := progressFlag{every: time.Nanosecond}
	report := f.reporter(tty, zap.NewNop())
	started := time.Now().Add(-10 * time.Second)
	p := tablearchive.Progress{Job: tablearchive.KindArchiveTable, Phase: tablearchive.PhaseExport, Table: "OnTheTerminal", Generation: "g", Started: started}
	report(p)
	p.Entities = 1000
	report(p)
	line, err := bufio.NewReader(control).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(line, "archive-table OnTheTerminal: export 1,000 entities, ") || !strings.Contains(line, "elapsed") {
		t.Fatalf("terminal line %q", line)
	}
}
