package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestLogTailExampleRuns(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	if err := run(t.Context(), &out, testenv.ConnectionString(t)); err != nil {
		t.Fatalf("example failed: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{"stored 250 expense claims", "one request, $top=10", "EXP00250", "log tail finished"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	// The 10 newest, newest first: EXP00250 down to EXP00241, nothing older.
	i250, i241 := strings.Index(text, "EXP00250"), strings.Index(text, "EXP00241")
	if i250 < 0 || i241 < 0 || i250 > i241 || strings.Contains(text, "EXP00240") {
		t.Errorf("the listing is not the 10 newest, newest first:\n%s", text)
	}
	// The claims of March 2024, counted from the example's schedule (one every 70 hours).
	start := time.Date(2023, 1, 2, 9, 0, 0, 0, time.UTC)
	n := 0
	for i := range 250 {
		if at := start.Add(time.Duration(i) * 70 * time.Hour); at.Year() == 2024 && at.Month() == time.March {
			n++
		}
	}
	if want := fmt.Sprintf("claims submitted in March 2024: %d,", n); n == 0 || !strings.Contains(text, want) {
		t.Errorf("output lacks %q:\n%s", want, text)
	}
}
