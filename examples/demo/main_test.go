package main

import (
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestDemoRuns(t *testing.T) {
	var out strings.Builder
	n := names{}.suffixed(strings.ToLower(testenv.QueueName(t)[len(testenv.QueueName(t))-8:]))
	if err := run(t.Context(), &out, testenv.ConnectionString(t), n); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"stored 5 employees", "processed 4, failed 0, poisoned 0",
		"now holds 2 employees: Marketing/000223 Sales/000123",
		"holds 2 employees: Sales/000152 (Jun Cao) Sales/000155 (Ken Kwok)",
		"holds Sara Davis", "(500 entities in 40 partitions", "table deleted: true", "demo finished",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}
