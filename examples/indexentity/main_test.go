package main

import (
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestIndexEntityExampleRuns(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), &out, testenv.ConnectionString(t)); err != nil {
		t.Fatalf("example failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"index entity Sales/idx!LastName!Jones!000000 lists 000152, 000155",
		"lookup Sales Jones: 2 employees",
		"Sales     000155  Ken  Jones  kenj@contoso.com",
		"renamed 000155 Jones -> Smith in one transaction: Jones [000152], Smith [000155 000160]",
		"20 concurrent writers added Joneses: the index lists 21 ids",
		"option 1, blob lastname/Jones lists 3: Marketing/000223, Sales/000152, Sales/000155",
		"option 3, partition idx!LastName!Jones lists 3: Marketing/000223, Sales/000152, Sales/000155",
		"after renaming Marketing/000223 to Smith, Jones lists 2: Sales/000152, Sales/000155",
		"lookup across departments, Smith: 2 employees",
		"index entities example finished",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if t.Failed() {
		return
	}
	t.Log("\n" + out.String())
}
