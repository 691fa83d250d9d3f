package secondaryindex

import (
	"context"
	"errors"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// submitted runs the transaction of p and returns its answer as the test seam, if set,
// replaces it. Only on a store that cannot delete a key inside a transaction (Azurite, for
// U+2028 or U+2029) is such a delete sent apart, after it (see the package documentation,
// "Consistency").
func (x *Intra[T]) submitted(ctx context.Context, p *plan) ([]string, error) {
	etags, err := repo.SubmitOrSplit(ctx, p.acts...)
	return etags, x.seams.answer(err)
}

// insertOutcome is the error of Insert's transaction, answered err (nil: written). A
// transaction whose outcome repo could not prove stays errs.ErrOutcomeUnknown: the copies
// may be this call's, so it is never a *UniqueViolationError ("nothing written").
func (x *Intra[T]) insertOutcome(err error, p *plan, v *T, pk string) error {
	if err = x.seams.answer(err); err != nil {
		return x.explain(err, p, v, pk)
	}
	return nil
}

// decideUnknown decides a transaction of Update, Upsert or Delete whose outcome repo could
// not prove (errs.ErrOutcomeUnknown), with repo.DecideOutcome: a copy still at the version
// its action was conditional on proves that nothing landed, and the change starts over;
// anything else returns the errs.ErrOutcomeUnknown error, since an entity found, changed or
// gone may be another writer's doing since, and writing again would undo it. decided is
// false for any other err, which is returned as the transaction's answer.
func (x *Intra[T]) decideUnknown(ctx context.Context, err error, p *plan) (_ error, decided bool) {
	err = x.seams.answer(err)
	if !errors.Is(err, repo.ErrOutcomeUnknown) {
		return err, false
	}
	return repo.DecideOutcome(ctx, err, p.acts...), true
}

// failed turns the refused transaction of a change into the error the caller should see,
// or into a retry when this call's own read was overtaken.
func (x *Intra[T]) failed(err error, p *plan, o changeOp, v *T, pk string, missing map[string]bool) error {
	var ae *repo.ActionError
	if !errors.As(err, &ae) || ae.Index < 0 || ae.Index >= len(p.steps) {
		return err
	}
	s := p.steps[ae.Index]
	switch {
	case s.guard && (errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrNotFound)):
		return x.stale(o, pk, p.steps[0].rk) // the caller's ETag is stale
	case errors.Is(err, repo.ErrPreconditionFailed):
		return retry.Again(err) // our own read is stale
	case errors.Is(err, repo.ErrAlreadyExists):
		if s.kind == stepPut {
			return x.violation(err, s, v, pk)
		}
		return retry.Again(err) // the primary was inserted concurrently (Upsert)
	case errors.Is(err, repo.ErrNotFound):
		if s.kind == stepDrop {
			missing[s.rk] = true // already gone: plan without it
		}
		return retry.Again(err)
	}
	return err
}

// stale is the error of a write whose caller's ETag no longer matches the entity of
// partition pk whose primary copy is rk: another writer changed (or deleted and wrote
// again) the entity since it was read. Whatever showed it (the service's 412 or 404 on
// the guarded action, which may be a copy's, or this call's own read), the caller gets
// one precondition failure naming the entity's primary copy, not the copy that was read.
func (x *Intra[T]) stale(o changeOp, pk, rk string) error {
	return errs.Precondition(o.String(), x.Name(), pk, rk, "the entity's ETag changed since it was read: another writer changed it (read it again and redo the change)")
}

// explain maps the failure of an Insert's transaction.
func (x *Intra[T]) explain(err error, p *plan, v *T, pk string) error {
	var ae *repo.ActionError
	if errors.Is(err, repo.ErrOutcomeUnknown) {
		return err // the copies may be this call's: never a *UniqueViolationError ("nothing written")
	}
	if errors.As(err, &ae) && ae.Index > 0 && ae.Index < len(p.steps) && errors.Is(err, repo.ErrAlreadyExists) {
		return x.violation(err, p.steps[ae.Index], v, pk)
	}
	return err
}

func (x *Intra[T]) violation(err error, s step, v *T, pk string) error {
	ix := x.all[s.ix]
	return &UniqueViolationError{Index: ix.Name, PartitionKey: pk, Value: ix.valueOf(v), Err: err}
}
