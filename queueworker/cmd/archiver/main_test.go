package main

import (
	"context"
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

// The binary stops gracefully on SIGTERM: it stops dequeuing, exits 0, and reports.
func TestBinaryStopsOnSIGTERM(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "archiver")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var stdout, stderr syncBuffer
	cmd := exec.CommandContext(t.Context(), bin, "run", "-allow-any", "-queue", testenv.QueueName(t), "-log-level", "info")
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+testenv.ConnectionString(t))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the worker runs (it logs "archiver started"), polling with a deadline.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for !strings.Contains(stderr.String(), "archiver started") {
		select {
		case <-ctx.Done():
			t.Fatalf("the archiver did not start:\n%s", stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "archiver stopped") || !strings.Contains(stdout.String(), "processed 0") {
		t.Fatalf("no graceful stop report:\nstdout: %s\nstderr: %s", stdout.String(), stderr.String())
	}
	if strings.Contains(stderr.String(), "AccountKey") {
		t.Fatal("the logs contain the connection string")
	}
}
