package main

import (
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestDemoRuns(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), &out, testenv.ConnectionString(t), testenv.TableName(t)); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{"stored 4 employees", "partition query Sales: 3 employees", "refused (ErrPreconditionFailed)", "demo finished"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}
