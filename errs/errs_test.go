package errs_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"context"
	"slices"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/errs"
	ierrs "github.com/tablepatterns/tablepatterns/internal/errs"
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

// errors.Is and errors.As reach the same values and types through the public and the
// internal names, in both directions, through every wrapper the SDK builds.
func TestErrorsMatchThroughPublicAndInternalNames(t *testing.T) {
	t.Parallel()
	inv := ierrs.Invalid("Field", "bad")
	var pub *errs.InvalidInputError
	if !errors.As(fmt.Errorf("ctx: %w", inv), &pub) || pub != inv || !errors.Is(inv, errs.ErrInvalidInput) {
		t.Errorf("internal InvalidInputError not reached as errs.InvalidInputError")
	}
	ou := &errs.OutcomeUnknownError{Op: "insert", Err: fmt.Errorf("409: %w", errs.ErrAlreadyExists)}
	var iou *ierrs.OutcomeUnknownError
	if !errors.As(ou, &iou) || !errors.Is(ou, ierrs.ErrOutcomeUnknown) || errors.Is(ou, errs.ErrAlreadyExists) {
		t.Errorf("OutcomeUnknownError: As %v, Is unknown %v, Is already-exists %v", errors.As(ou, &iou), errors.Is(ou, ierrs.ErrOutcomeUnknown), errors.Is(ou, errs.ErrAlreadyExists))
	}
	se := &ierrs.ServiceError{Op: "get", StatusCode: 404, Code: "ResourceNotFound", Kind: ierrs.ErrNotFound}
	var pse *errs.ServiceError
	if !errors.As(fmt.Errorf("x: %w", se), &pse) || !errors.Is(se, errs.ErrNotFound) || !errors.Is(se, repo.ErrNotFound) {
		t.Errorf("ServiceError not reached through errs")
	}
}

// The package doc: a retry loop that gave up wraps ErrTransient and the sentinel of its
// last attempt, and nothing else. A read-modify-write that keeps losing races
// (retry.Optimistic, the loop of dataseries, wideentity, largeentity, indexentity...)
// therefore wraps exactly ErrPreconditionFailed and ErrTransient: the error says both
// "the retries ran out" and "because another writer kept winning".
func TestExhaustedConflictLoopWrapsPreconditionFailedAndTransient(t *testing.T) {
	t.Parallel()
	p := retry.Policy{Delay: time.Millisecond, MinDelay: time.Millisecond, MaxDelay: time.Millisecond, MaxRetries: 2}
	op := retry.Op{Name: "series update", Retryable: func(err error) bool { return errors.Is(err, errs.ErrPreconditionFailed) }}
	err := retry.Optimistic(context.Background(), p, op, func(context.Context, int) error {
		return fmt.Errorf("412: %w", errs.ErrPreconditionFailed)
	})
	var n []string
	for name, s := range map[string]error{"ErrNotFound": errs.ErrNotFound, "ErrAlreadyExists": errs.ErrAlreadyExists, "ErrPreconditionFailed": errs.ErrPreconditionFailed,
		"ErrTableBeingDeleted": errs.ErrTableBeingDeleted, "ErrInvalidInput": errs.ErrInvalidInput, "ErrTransient": errs.ErrTransient, "ErrOutcomeUnknown": errs.ErrOutcomeUnknown} {
		if errors.Is(err, s) {
			n = append(n, name)
		}
	}
	slices.Sort(n)
	if want := []string{"ErrPreconditionFailed", "ErrTransient"}; !slices.Equal(n, want) {
		t.Errorf("exhausted conflict loop: %v wraps %v, want %v (the errs package doc)", err, n, want)
	}
}
