package heterogeneous

import (
	"context"
	"errors"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// version is one entity of a transaction as the round read it before writing: the
// transaction would have changed it (If-Match on etag, or an insert when etag is "").
type version struct{ rk, etag string }

// settle decides a transaction of partition pk whose outcome repo could not prove (err, an
// errs.ErrOutcomeUnknown) from a fresh read of the entities it would have changed, with
// retry.Decide: the transaction is atomic, so one of them still at the version read proves
// that none of it landed and the round starts over. A child found or not found proves
// nothing: another writer may have removed or re-added it since this call's transaction
// landed, and acting on it would undo that writer's acknowledged change.
func (r *OneToMany[P, C, N]) settle(ctx context.Context, err error, pk string, read ...version) error {
	ev := retry.Unproven
	for _, v := range read {
		now, gerr := r.etagOf(ctx, pk, v.rk)
		if gerr != nil {
			return errors.Join(err, gerr)
		}
		ev = ev.Or(retry.Unchanged(v.etag, now))
	}
	return retry.Decide(err, ev)
}

// etagOf returns the stored ETag of (pk, rk) whatever its type, "" when it is absent.
func (r *OneToMany[P, C, N]) etagOf(ctx context.Context, pk, rk string) (string, error) {
	etag, err := repo.GetFunc(ctx, r.t.dyn, pk, rk, func(_ []byte, etag string) (string, error) { return etag, nil })
	if errors.Is(err, repo.ErrNotFound) {
		return "", nil
	}
	return etag, err
}
