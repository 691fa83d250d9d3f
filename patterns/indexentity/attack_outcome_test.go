package indexentity

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks option 2's "an Insert that may have landed returns the errs.ErrOutcomeUnknown
// error, never errs.ErrAlreadyExists alone ("nothing written")" and retry.Optimistic's
// rule "an errs.ErrOutcomeUnknown ... the error itself otherwise. Never success on a
// guess" for a Delete conditional on the caller's ETag: its transaction lands, the outcome
// is reported unknown, and before the fresh read another writer inserts the entity again
// (a new ETag). The read cannot tell "my delete did not land and the entity changed" from
// "my delete landed and the entity was re-created": the answer must be the unknown
// outcome, not errs.ErrPreconditionFailed ("your ETag is stale; nothing was deleted").
func TestAttackSamePartitionConditionalDeleteUnknownThenRecreated(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ix := b.samePartition(&SamePartitionOptions{Conflict: fast})
	e := emp("Sales", "000152", "Jones")
	if err := ix.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	want := e.ETag
	done := false
	ix.afterSubmit = func(step string, err error) error {
		if step != "delete" || done {
			return err
		}
		done = true
		if err != nil {
			t.Errorf("the delete transaction did not land: %v", err)
		}
		// Another writer re-creates the entity before the loop's fresh read.
		if err := ix.Insert(b.Ctx, emp("Sales", "000152", "Jones")); err != nil {
			t.Errorf("re-create: %v", err)
		}
		return fmt.Errorf("indexentity test: retried transaction: %w (%w)", repo.ErrOutcomeUnknown,
			&repo.Error{Op: "transaction", StatusCode: 404, Code: "ResourceNotFound", Kind: repo.ErrNotFound})
	}
	err := ix.Delete(b.Ctx, "Sales", "000152", &repo.DeleteOptions{ETag: want})
	if !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("Delete whose transaction landed = %v; want ErrOutcomeUnknown (errs.ErrPreconditionFailed says nothing was deleted)", err)
	}
	b.checkIndex(ix, "Sales")
}

// The same for an Update conditional on the caller's ETag: its transaction lands, the
// outcome is reported unknown, and another writer deletes the entity before the fresh
// read. outcomeUnknown takes "not found" for "an insert that did not land" and starts over;
// the next round answers errs.ErrNotFound, as if nothing had been written.
func TestAttackSamePartitionConditionalUpdateUnknownThenDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ix := b.samePartition(&SamePartitionOptions{Conflict: fast})
	e := emp("Sales", "000153", "Jones")
	if err := ix.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	done := false
	ix.afterSubmit = func(step string, err error) error {
		if step != "update" || done {
			return err
		}
		done = true
		if err != nil {
			t.Errorf("the update transaction did not land: %v", err)
		}
		if err := ix.Delete(b.Ctx, "Sales", "000153", nil); err != nil {
			t.Errorf("concurrent delete: %v", err)
		}
		return fmt.Errorf("indexentity test: retried transaction: %w (%w)", repo.ErrOutcomeUnknown,
			&repo.Error{Op: "transaction", StatusCode: 412, Code: "UpdateConditionNotSatisfied", Kind: repo.ErrPreconditionFailed})
	}
	e.LastName = "Smith" // e.ETag is the caller's
	err := ix.Update(b.Ctx, e)
	if !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("Update whose transaction landed = %v; want ErrOutcomeUnknown", err)
	}
}
