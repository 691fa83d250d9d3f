package errs_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/errs"
	ierrs "github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// errors.Is and errors.As reach the same values and types through the public and the
// internal names, in both directions, through every wrapper the SDK builds.
func TestAttackErrsAcrossPackages(t *testing.T) {
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
// therefore wraps exactly ErrPreconditionFailed and ErrTransient. (The doc once promised
// exactly one sentinel per error; the error is right to say both "the retries ran out"
// and "because another writer kept winning", so the doc was corrected.)
func TestAttackErrsExactlyOneSentinel(t *testing.T) {
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
