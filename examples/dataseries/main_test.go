package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestDataSeriesExampleRuns(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	if err := run(t.Context(), &out, testenv.ConnectionString(t)); err != nil {
		t.Fatalf("example failed: %v\n%s", err, out.String())
	}
	text := out.String()
	day1 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	msgs := append(traffic(day1), traffic(day1.AddDate(0, 0, 1))...)
	perDay := map[string]int{}
	for _, m := range msgs {
		perDay[m.Employee+" on "+m.Sent.Format("2006-01-02")]++
	}
	for k, n := range perDay {
		if want := fmt.Sprintf("  %s: %4d messages", k, n); !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	for _, want := range []string{fmt.Sprintf("counted %d messages: each once", len(msgs)), "(2 requests)", "data series finished"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	rows := 0
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "  05-01 ") || strings.HasPrefix(line, "  05-02 ") {
			rows++
		}
	}
	if n := rows; n != 24 {
		t.Errorf("the chart has %d rows, want 24:\n%s", n, text)
	}
}
