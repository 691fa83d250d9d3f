package main

import (
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestHeterogeneousExampleRuns(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	if err := run(t.Context(), &out, testenv.ConnectionString(t)); err != nil {
		t.Fatalf("example failed: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"added 4 employees to 2 departments",
		"  Department Sales, manager Jones, EmployeeCount 3\n",
		"  Employee   000123 Don Hall, 34\n",
		"  Employee   000155 Ken Kwok, 23\n",
		"after removing 000152: Sales EmployeeCount 2, 2 employees stored",
		"after 25 concurrent hires: Marketing EmployeeCount 26, 26 employees stored",
		"heterogeneous finished",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	// The query of Sales decoded exactly one department and three employees.
	sales := text[strings.Index(text, "one query of partition Sales"):strings.Index(text, "after removing")]
	if strings.Count(sales, "  Department ") != 1 || strings.Count(sales, "  Employee ") != 3 || strings.Contains(sales, "Phillips") {
		t.Errorf("the query of Sales:\n%s", sales)
	}
}
