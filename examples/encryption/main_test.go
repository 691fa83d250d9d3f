package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestEncryptionExampleRuns(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	if err := run(t.Context(), &out, testenv.ConnectionString(t)); err != nil {
		t.Fatalf("example failed: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"stored 5 employees (two copies each, one transaction each)",
		"EmployeeId=000223 FirstName=Jun LastName=Jones SSN=<42 bytes binary> Salary=<36 bytes binary> _EncryptionMetadata=<",
		"Jun Jones, SSN ***-**-6789, salary 93250",
		"merge of the salary alone: refused (true)",
		"salary now 95000",
		"tampered (true), nothing decrypted",
		"Ken reads again (salary 64000)",
		"rewrapped 6, resume token saved: true; keys now kek-2023: 4, kek-2024: 6",
		"midway, with both keys: all 5 employees read",
		"rewrapped 4, done: true; keys now kek-2023: 0, kek-2024: 10",
		"5 employees read with kek-2024 alone, payroll 400500", // 72000+81500+64000+95000+88000
		"encryption example finished",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	// No plaintext secret reaches the stored entity's description.
	stored := regexp.MustCompile(`stored Sales/empid_000223: .*`).FindString(text)
	for _, secret := range []string{"323-45-6789", "93250", "jonesj@contoso.com"} {
		if stored == "" || strings.Contains(stored, secret) {
			t.Errorf("stored entity %q shows %q", stored, secret)
		}
	}
}
