package main

import (
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestExampleRuns(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), &out, testenv.ConnectionString(t)); err != nil {
		t.Fatalf("example failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"wrote 4020 records", "to 3 blobs; nothing left buffered: true",
		"blob webapp/2014/07/31/1500/000001.log", "records 15:00:00 to 15:59:59",
		"15:04:07 level=Error request=367",
		"15:04-15:06: 120 records, 20 errors and critical messages",
		"blob log example finished",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "1400/") || strings.Contains(out.String(), "1600/") {
		t.Errorf("the range listing read other hours:\n%s", out.String())
	}
}
