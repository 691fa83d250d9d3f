package main

import (
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestMigrationExampleRuns(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	if err := run(t.Context(), &out, testenv.ConnectionString(t)); err != nil {
		t.Fatalf("example failed: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"stored 300 employees",
		"stage dualwrite", "stage backfill", "stage verify", "stage cutover", "stage cleanup", "stage done",
		"old layout: 0 entities",
		"new layout: 300 employees over 16 partitions",
		", 0 missing from the new layout",
		"migration finished",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}
