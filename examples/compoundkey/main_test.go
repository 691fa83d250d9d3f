package main

import (
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestCompoundKeyExampleRuns(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	if err := run(t.Context(), &out, testenv.ConnectionString(t)); err != nil {
		t.Fatalf("example failed: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"stored 3 employees and 9 reviews in partition Sales",
		"RowKey ge 'empid_000123_' and RowKey lt 'empid_000123`'",
		"LastReviewYear is now 2014",
		"compound key finished",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	// Only employee 000123's reviews are listed (not 001234's, not the employee row), in
	// year order, first three years then four after the transaction.
	if n := strings.Count(text, "  empid_000123_"); n != 3+4 {
		t.Errorf("%d review lines, want 7:\n%s", n, text)
	}
	if strings.Contains(text, "  empid_001234") || strings.Contains(text, "Kwok") {
		t.Errorf("the listing holds another employee's reviews:\n%s", text)
	}
	if i, j := strings.Index(text, "empid_000123_2011"), strings.Index(text, "empid_000123_2013"); i < 0 || j < i {
		t.Errorf("reviews not in year order:\n%s", text)
	}
}
