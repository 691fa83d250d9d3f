package periodtable

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// isTableNotFound tells "the table does not exist" from "the entity does not exist". A
// write whose outcome repo could not tell because its retry met TableNotFound
// (errs.ErrOutcomeUnknown) counts too: whatever an earlier attempt did, the table is gone
// now, and so is anything it stored; the write re-checks its period before creating it.
func isTableNotFound(err error) bool {
	var ue *repo.OutcomeUnknownError
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var se *errs.ServiceError
	return errors.As(err, &se) && se.Code == "TableNotFound"
}

// create creates a period table. It calls the service directly rather than
// repo.Table.CreateIfNotExists, whose only way not to wait on TableBeingDeleted
// (CreateWait -1) also turns off its transient retries. Here transient failures are
// retried, an existing table (ours, or a concurrent writer's, or our own lost response) is
// success, and a table being deleted is a dropped period: it is not waited for, so that
// its name is never reused.
func (p *Tables[T]) create(ctx context.Context, t *repo.Table[T]) error {
	op := retry.Op{Name: "create table", Resource: t.Name()}
	err := retry.Do(ctx, p.topts.Retry, op, func(ctx context.Context, _ int) error {
		_, err := t.Client().CreateTable(ctx, nil)
		err = errs.Wrap(err, "create table", t.Name(), "", "")
		if errors.Is(err, repo.ErrAlreadyExists) {
			return nil
		}
		return err
	})
	if errors.Is(err, repo.ErrTableBeingDeleted) {
		return fmt.Errorf("periodtable: the table %s is being deleted (its period was dropped); it is not re-created under the same name: %w", t.Name(), err)
	}
	return err
}
