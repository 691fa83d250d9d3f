package main

import (
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestSecondaryIndexExampleRuns(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	if err := run(t.Context(), &out, testenv.ConnectionString(t)); err != nil {
		t.Fatalf("example failed: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"stored 6 employees, two entities each",
		"'email_jonesj@contoso.com': Jun Jones, employee 000223 (copy email_jonesj@contoso.com)",
		"employee ids 000100 to 000199: 000123 000152 000155\n",
		"emails starting with 'a', in email order: als@contoso.com amya@contoso.com\n",
		"old address found: false, new address found: true",
		`refused, unique index "email" already holds "donh@contoso.com"`,
		"the partition holds 12 entities for 6 employees",
		"before the worker runs, kenk@contoso.com in email_Sales: false",
		"after the worker ran: kenk@contoso.com is employee 000155 Kwok",
		"old address found: true; verified against the primary: false",
		"after the worker ran: old address found: false, new address is employee 000155",
		"email_Sales in email order: als@contoso.com amya@contoso.com donh@contoso.com jonesj@contoso.com junc@contoso.com ken.kwok@contoso.com\n",
		"secondary indexes finished",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}
