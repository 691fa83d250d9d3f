package errs_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/errs"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// TestSameValues proves that the public names are the values the packages wrap: an error
// built by one package is recognised through errs, and through the older re-exports.
func TestSameValues(t *testing.T) {
	pairs := []struct {
		name     string
		pub, old error
	}{
		{"ErrNotFound", errs.ErrNotFound, repo.ErrNotFound},
		{"ErrAlreadyExists", errs.ErrAlreadyExists, repo.ErrAlreadyExists},
		{"ErrPreconditionFailed", errs.ErrPreconditionFailed, repo.ErrPreconditionFailed},
		{"ErrTableBeingDeleted", errs.ErrTableBeingDeleted, repo.ErrTableBeingDeleted},
		{"ErrInvalidInput", errs.ErrInvalidInput, codec.ErrInvalidInput},
		{"ErrTransient", errs.ErrTransient, retry.ErrTransient},
		{"ErrOutcomeUnknown", errs.ErrOutcomeUnknown, repo.ErrOutcomeUnknown},
	}
	seen := map[error]string{}
	for _, p := range pairs {
		if p.pub != p.old {
			t.Errorf("errs.%s is not the value the packages wrap", p.name)
		}
		if other, dup := seen[p.pub]; dup {
			t.Errorf("errs.%s and errs.%s are the same value", p.name, other)
		}
		seen[p.pub] = p.name
		if !errors.Is(fmt.Errorf("wrapped: %w", p.old), p.pub) {
			t.Errorf("errors.Is does not reach errs.%s", p.name)
		}
	}
}

// TestInvalidInputFromAPackage: a refusal made by a package (queueworker's constructor, no
// request sent) is reached with errors.As on the public type.
func TestInvalidInputFromAPackage(t *testing.T) {
	_, err := queueworker.NewClient(nil, nil)
	var bad *errs.InvalidInputError
	if !errors.As(err, &bad) || !errors.Is(err, errs.ErrInvalidInput) {
		t.Fatalf("NewClient(nil) = %v, want an *errs.InvalidInputError", err)
	}
	if bad.Field == "" {
		t.Fatalf("the error names no field: %v", err)
	}
}

func TestRedact(t *testing.T) {
	err := errors.New(`GET https://acct.table.core.windows.net/t?sig=SECRET&se=2030 failed`)
	if got := errs.Redact(err); got == "" || contains(got, "SECRET") {
		t.Fatalf("Redact kept the signature: %q", got)
	}
	if errs.Redact(nil) != "" {
		t.Fatal("Redact(nil) is not empty")
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
