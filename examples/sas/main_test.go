package main

import (
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestSASExampleRuns(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	if err := run(t.Context(), &out, testenv.ConnectionString(t)); err != nil {
		t.Fatalf("example failed: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"server: stored 5 employees",
		"sp=ru ", "spk=Sales epk=Sales sig=(not shown)",
		"Sales app: read its partition: 3 employees",
		"Sales app: updated Jun Cao's phone to 425-555-0101",
		"Sales app: insert refused: 403 AuthorizationPermissionMismatch",
		"Marketing/000223 is outside its token's range",
		"dashboard: read 5 employees across 2 departments",
		"dashboard: delete refused: 403 AuthorizationPermissionMismatch",
		"expired token: refused: 403",
		"aztables' Sales token (sv=2019-02-02 sp=r se=",
		"refused: 403 AuthorizationFailure",
		"sas example finished",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	// The aztables token carries no range; no signature is ever printed.
	if i := strings.Index(text, "aztables' Sales token"); i < 0 || strings.Contains(text[i:], "spk=") {
		t.Errorf("aztables token described with a range:\n%s", text)
	}
	if strings.Contains(text, "sig=") && strings.Count(text, "sig=") != strings.Count(text, "sig=(not shown)") {
		t.Errorf("a signature was printed:\n%s", text)
	}
}
