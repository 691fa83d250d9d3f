package main

import (
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestExampleRuns(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), &out, testenv.ConnectionString(t)); err != nil {
		t.Fatalf("example failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"stored Sales/000123 Don Hall: photo 180 KiB in blob ",
		"stored Marketing/000223 Jeff Phillips: photo 12 KiB inline in the entity",
		"lazy read Sales/000123: photo 184320 bytes", "loaded false",
		"loaded on demand: 184320 bytes, verified",
		"old blob deleted: true",
		"update from a stale copy: refused (ErrPreconditionFailed)",
		"eager read Sales/000152 Jun Cao: photo 240 KiB in memory",
		"sweep: 1 blobs scanned, 1 too young to judge, 0 orphans deleted",
		"large entities example finished",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
