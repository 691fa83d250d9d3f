package heterogeneous

import (
	"context"
	"errors"

	"github.com/tablepatterns/tablepatterns/repo"
)

// decideUnknown decides a transaction of Add or Delete whose outcome repo could not prove
// (errs.ErrOutcomeUnknown), with repo.DecideOutcome: it starts over only when the parent
// (or the child being removed) is still at the version read, which proves that none of
// the atomic transaction landed. A child found or not found proves nothing: another
// writer may have removed or re-added it since this call's transaction landed, and
// acting on it would undo that writer's acknowledged change. decided is false for any
// other err, which is returned as the transaction's answer.
func (r *OneToMany[P, C, N]) decideUnknown(ctx context.Context, err error, child, parent Action) (_ error, decided bool) {
	err = r.seams.answer(err)
	if !errors.Is(err, repo.ErrOutcomeUnknown) {
		return err, false
	}
	return repo.DecideOutcome(ctx, err, child.a, parent.a), true
}
