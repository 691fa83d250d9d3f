package errs_test

import (
	"context"
	"errors"
	"fmt"
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

// The package doc: "Every error the SDK returns for one of these conditions wraps exactly
// one of them." A read-modify-write that keeps losing races (retry.Optimistic, the loop of
// dataseries, wideentity, largeentity, indexentity...) returns an error that wraps two:
// ErrTransient and ErrPreconditionFailed. Either the doc or the error is wrong.
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
	if len(n) != 1 {
		t.Errorf("exhausted conflict loop: %v wraps %v", err, n)
	}
}
