package indexentity

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
)

// unknownOnce makes the first transaction of step report repo.ErrOutcomeUnknown, as a
// retried transaction does when a lost response may hide its first attempt and the retry
// meets a conflict. landed says whether that first transaction really applied:
// when not, the proxy refuses it (412) before it reaches the table.
func unknownOnce(b *bed, ix *SamePartition[Employee], step string, landed bool) {
	b.t.Helper()
	if !landed {
		b.tableProxy().AddRule(faultproxy.Rule{Name: "refused", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.Respond(http.StatusPreconditionFailed, "UpdateConditionNotSatisfied")})
	}
	done := false
	ix.seams.afterSubmit = func(s string, err error) error {
		if s != step || done {
			return err
		}
		done = true
		if landed != (err == nil) {
			b.t.Errorf("%s: the first transaction landed %v, want %v: %v", step, err == nil, landed, err)
		}
		return fmt.Errorf("indexentity test: retried transaction: %w (%w)", repo.ErrOutcomeUnknown,
			&repo.Error{Op: "transaction", StatusCode: 409, Code: "EntityAlreadyExists", Kind: repo.ErrAlreadyExists})
	}
}

// For option 2: a transaction whose outcome repo cannot prove (ErrOutcomeUnknown) is
// re-decided from a fresh read of the entities it would have changed conditionally
// (repo.DecideOutcome; the transaction is atomic): one still at the version read proves
// nothing landed, and the call starts over (Delete and Update, which were conditional on
// the entity's ETag); anything else is the unknown outcome, never success nor "nothing
// written" (a first Insert of a value writes only inserts, which no read can prove
// unapplied). The index stays exact in every case.
func TestSamePartitionOutcomeUnknownIsRedecided(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		step    string
		landed  bool
		wantErr bool
	}{
		{"insert", true, true},
		{"insert", false, true},
		{"delete", true, true},
		{"delete", false, false},
		{"update", true, true},
		{"update", false, false},
	} {
		t.Run(fmt.Sprintf("%s landed=%v", c.step, c.landed), func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			ix := b.samePartition(nil)
			e := emp("Sales", "000152", "Jones")
			if c.step != "insert" {
				if err := ix.Insert(b.Ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			unknownOnce(b, ix, c.step, c.landed)
			var err error
			switch c.step {
			case "insert":
				err = ix.Insert(b.Ctx, e)
			case "delete":
				err = ix.Delete(b.Ctx, "Sales", "000152", nil)
			case "update":
				e.LastName, e.ETag = "Smith", ""
				err = ix.Update(b.Ctx, e)
			}
			switch {
			case c.wantErr && !errors.Is(err, repo.ErrOutcomeUnknown):
				t.Fatalf("%s: %v, want ErrOutcomeUnknown", c.step, err)
			case !c.wantErr && err != nil:
				t.Fatalf("%s: %v, want nil", c.step, err)
			}
			b.checkIndex(ix, "Sales")
			want := map[string][]string{"insert": {"000152"}, "update": nil, "delete": nil}[c.step]
			if c.step == "insert" && !c.landed {
				want = nil // refused, and not retried on a guess
			}
			if ids, err := ix.IDs(b.Ctx, "Sales", "Jones"); err != nil || !slices.Equal(ids, want) {
				t.Fatalf("Jones lists %v (%v), want %v", ids, err, want)
			}
		})
	}
}

// Option 2's promise "an Insert that may have landed returns the errs.ErrOutcomeUnknown
// error, never errs.ErrAlreadyExists alone ("nothing written")" and retry.Optimistic's
// rule "an errs.ErrOutcomeUnknown ... the error itself otherwise. Never success on a
// guess" for a Delete conditional on the caller's ETag: its transaction lands, the outcome
// is reported unknown, and before the fresh read another writer inserts the entity again
// (a new ETag). The read cannot tell "my delete did not land and the entity changed" from
// "my delete landed and the entity was re-created": the answer must be the unknown
// outcome, not errs.ErrPreconditionFailed ("your ETag is stale; nothing was deleted").
func TestSamePartitionConditionalDeleteUnknownThenRecreated(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ix := b.samePartition(&SamePartitionOptions{Conflict: fast})
	e := emp("Sales", "000152", "Jones")
	if err := ix.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	want := e.ETag
	done := false
	ix.seams.afterSubmit = func(step string, err error) error {
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
func TestSamePartitionConditionalUpdateUnknownThenDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ix := b.samePartition(&SamePartitionOptions{Conflict: fast})
	e := emp("Sales", "000153", "Jones")
	if err := ix.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	done := false
	ix.seams.afterSubmit = func(step string, err error) error {
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
