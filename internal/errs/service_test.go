package errs

import (
	"errors"
	"strings"
	"testing"
)

func TestPreconditionIsTheServicesAnswerWithItsReason(t *testing.T) {
	err := Precondition("index update", "Employees", "Sales", "empid_000223", "the ETag changed since the entity was read")
	if !errors.Is(err, ErrPreconditionFailed) {
		t.Fatalf("%v does not unwrap to ErrPreconditionFailed", err)
	}
	if s, c := err.ResponseStatus(); s != 412 || c != "UpdateConditionNotSatisfied" {
		t.Errorf("status %d %q, want 412 UpdateConditionNotSatisfied", s, c)
	}
	for _, want := range []string{`PartitionKey="Sales"`, `RowKey="empid_000223"`, "ETag changed", "412"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err.Error(), want)
		}
	}
}
