package main

import (
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestDenormalizeExampleRuns(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), &out, testenv.ConnectionString(t)); err != nil {
		t.Fatalf("example failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"point query Sales/DEPARTMENT: Sales, 42 employees, manager Jun Cao (425-555-0101, junc@contoso.com)",
		"point query Sales/DEPARTMENT: Sales, 42 employees, manager Jun Cao (425-555-0199, junc@contoso.com)",
		"Sales/000152 is copied into 1: Sales/DEPARTMENT",
		"Marketing/000223 is copied into 2: Departments/Events Departments/Marketing",
		"point query Departments/Events: Events, 5 employees, manager Jeff Phillips (425-555-0177, jeffp@contoso.com)",
		"point query Departments/Marketing: Marketing, 17 employees, manager Jeff Phillips (425-555-0177, jeffp@contoso.com)",
		"denormalization example finished",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if !t.Failed() {
		t.Log("\n" + out.String())
	}
}
