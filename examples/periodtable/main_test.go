package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestPeriodTableExampleRuns(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	if err := run(t.Context(), &out, testenv.ConnectionString(t)); err != nil {
		t.Fatalf("example failed: %v\n%s", err, out.String())
	}
	text := out.String()
	// Failed attempts of jonesj (user 4) on days 2, 3 and 4: (i+u+d)%5 == 0.
	failed := 0
	for d := 2; d < 5; d++ {
		for i := range 12 {
			if (i+4+d)%5 == 0 {
				failed++
			}
		}
	}
	// 63.5 days after 2024-05-01, with 60 days of retention and 5 minutes of skew, the days
	// that ended by 2024-05-04T11:55Z are dropped: 05-01, 05-02 and 05-03.
	for _, want := range []string{
		"stored 420 sign-in attempts in 7 daily tables",
		fmt.Sprintf("  %d failed attempts", failed),
		"dropped 3 tables",
		"20240501\n", "20240503\n",
		"4 daily tables left",
		"refused (ErrInvalidInput)",
		"period tables finished",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Count(text, "Z from 10.0.4.") != failed {
		t.Errorf("the fan-out query listed %d attempts, want %d:\n%s", strings.Count(text, "Z from 10.0.4."), failed, text)
	}
}
