package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestWideEntityExampleRuns(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	if err := run(t.Context(), &out, testenv.ConnectionString(t)); err != nil {
		t.Fatalf("example failed: %v\n%s", err, out.String())
	}
	text := out.String()
	// The totals, computed from the example's counts and its two changes.
	for e, emp := range employees {
		var months [12]int
		total := 0
		for d := 1; d <= 365; d++ {
			n := int(dailyCount(e, d))
			switch {
			case emp == "000123" && d == 200:
				n = 99
			case emp == "000152" && d <= 7:
				n = 0
			}
			months[yearStart.AddDate(0, 0, d-1).Month()-1] += n
			total += n
		}
		props := 366
		if emp == "000152" {
			props = 367 // the Note
		}
		want := fmt.Sprintf("%s (employee %s, %d properties): %d messages in the year; by month %v", emp, emp, props, total, months)
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "  RowKey 000123!02!0"); n != 2 {
		t.Errorf("%d physical entities listed for 000123, want 2:\n%s", n, text)
	}
	day200 := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 199).Format("2006-01-02")
	for _, want := range []string{"each in one transaction", "D200 (" + day200 + ")", "wide entities finished"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}
