package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// syncBuffer is a strings.Builder that the process's output goroutines and the test can
// share.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// binary builds the archiver into the test's temporary directory.
func binary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "archiver")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runUntilTerm starts bin with args against the test account, waits until its stderr holds
// started, sends SIGTERM, and returns what it wrote and how it exited. It fails t if the
// archiver exits first or writes nothing for testenv.DefaultStall: a stall, not a slow
// machine (the overall bound is go test -timeout).
func runUntilTerm(t *testing.T, bin, started string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut syncBuffer
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+testenv.ConnectionString(t))
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	last, moved := 0, time.Now()
	for !strings.Contains(errOut.String(), started) {
		if n := len(errOut.String()); n != last {
			last, moved = n, time.Now()
		} else if idle := time.Since(moved); idle > testenv.DefaultStall {
			t.Fatalf("the archiver did not start; it wrote nothing for %v:\n%s", idle.Round(time.Second), errOut.String())
		}
		select {
		case err := <-exited:
			t.Fatalf("the archiver exited (%v) before it started:\n%s", err, errOut.String())
		case <-time.After(20 * time.Millisecond): // polling its output, not synchronisation by sleep
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = <-exited
	return out.String(), errOut.String(), err
}

// The binary stops gracefully on SIGTERM: it stops dequeuing, exits 0, and reports.
func TestBinaryStopsOnSIGTERM(t *testing.T) {
	stdout, stderr, err := runUntilTerm(t, binary(t), "archiver started", "run", "-allow-any", "-queue", testenv.QueueName(t), "-log-level", "info")
	if err != nil {
		t.Fatalf("exit after SIGTERM: %v\nstdout: %s\nstderr: %s", err, stdout, stderr)
	}
	if !strings.Contains(stderr, "archiver stopped") || !strings.Contains(stdout, "processed 0") {
		t.Fatalf("no graceful stop report:\nstdout: %s\nstderr: %s", stdout, stderr)
	}
	if strings.Contains(stderr, "AccountKey") {
		t.Fatal("the logs contain the connection string")
	}
}
