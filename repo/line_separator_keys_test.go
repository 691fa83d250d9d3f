package repo_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
)

// lineSeparators are the two characters Azurite's $batch key parser stops at.
var lineSeparators = []struct{ name, r string }{{"U+2028", "\u2028"}, {"U+2029", "\u2029"}}

// bystander is the row Azurite addresses instead of a transaction's delete of a key with
// a line separator: the one with the empty RowKey of the partition.
func bystander(t *testing.T, b *bed, tb *repo.Table[Employee], dept string) {
	t.Helper()
	if err := tb.Insert(b.ctx, employee(dept, "")); err != nil {
		t.Fatal(err)
	}
}

func mustExist(t *testing.T, b *bed, tb *repo.Table[Employee], dept, id, what string) {
	t.Helper()
	if _, err := tb.Get(b.ctx, dept, id); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestSubmitNeverDeletesAnotherEntityForALineSeparatorKey(t *testing.T) {
	t.Parallel()
	for _, sep := range lineSeparators {
		t.Run(sep.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			tb := table[Employee](t, b, nil)
			bystander(t, b, tb, "Sales")
			id := "a" + sep.r + "b"
			if err := tb.Insert(b.ctx, employee("Sales", id)); err != nil {
				t.Fatal(err)
			}
			other := employee("Sales", "other")
			_, err := repo.Submit(b.ctx, tb.DeleteAction("Sales", id, nil), tb.InsertAction(other))
			mustExist(t, b, tb, "Sales", "", "the entity with the empty RowKey")
			if err == nil {
				// The store addressed the key right (a real account): the delete happened.
				if _, gerr := tb.Get(b.ctx, "Sales", id); !errors.Is(gerr, repo.ErrNotFound) {
					t.Fatalf("Submit succeeded but the deleted entity is still there (%v)", gerr)
				}
				return
			}
			if !errors.Is(err, repo.ErrDeleteMisaddressed) {
				t.Fatalf("Submit: %v, want ErrDeleteMisaddressed", err)
			}
			var ae *repo.ActionError
			if !errors.As(err, &ae) || ae.Index != 0 {
				t.Fatalf("Submit: %v, want the *ActionError of action 0", err)
			}
			mustExist(t, b, tb, "Sales", id, "the entity of the refused delete")
			if _, gerr := tb.Get(b.ctx, "Sales", "other"); !errors.Is(gerr, repo.ErrNotFound) {
				t.Fatalf("the transaction was refused but its insert landed (%v)", gerr)
			}
		})
	}
}

func TestSubmitOrSplitDeletesALineSeparatorKeyApart(t *testing.T) {
	t.Parallel()
	for _, sep := range lineSeparators {
		t.Run(sep.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			tb := table[Employee](t, b, nil)
			bystander(t, b, tb, "Sales")
			id := "a" + sep.r + "b"
			doomed := employee("Sales", id)
			if err := tb.Insert(b.ctx, doomed); err != nil {
				t.Fatal(err)
			}
			other := employee("Sales", "other")
			etags, err := repo.SubmitOrSplit(b.ctx, tb.InsertAction(other), tb.DeleteAction("Sales", id, &repo.DeleteOptions{ETag: doomed.ETag}))
			if err != nil {
				t.Fatal(err)
			}
			if len(etags) != 2 || etags[0] == "" || etags[0] != other.ETag || etags[1] != "" {
				t.Fatalf("etags %q, inserted value's ETag %q", etags, other.ETag)
			}
			mustExist(t, b, tb, "Sales", "", "the entity with the empty RowKey")
			mustExist(t, b, tb, "Sales", "other", "the inserted entity")
			if _, gerr := tb.Get(b.ctx, "Sales", id); !errors.Is(gerr, repo.ErrNotFound) {
				t.Fatalf("the deleted entity is still there (%v)", gerr)
			}
		})
	}
}

func TestSubmitRefusesAnUnconditionalDeleteOfAMissingLineSeparatorKey(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	tb := table[Employee](t, b, nil)
	bystander(t, b, tb, "Sales")
	_, err := repo.Submit(b.ctx, tb.DeleteAction("Sales", "gone\u2028", nil))
	if !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("Submit: %v, want ErrNotFound", err)
	}
	mustExist(t, b, tb, "Sales", "", "the entity with the empty RowKey")
}

func TestSubmitOrSplitDeletesALineSeparatorPartitionKeyApart(t *testing.T) {
	t.Parallel()
	for _, sep := range lineSeparators {
		t.Run(sep.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			tb := table[Employee](t, b, nil)
			dept := "Sa" + sep.r + "les"
			bystander(t, b, tb, dept)
			doomed := employee(dept, "1")
			if err := tb.Insert(b.ctx, doomed); err != nil {
				t.Fatal(err)
			}
			_, err := repo.Submit(b.ctx, tb.DeleteAction(dept, "1", nil))
			t.Logf("Submit: %v", err)
			if err != nil && !errors.Is(err, repo.ErrDeleteMisaddressed) {
				t.Fatalf("Submit: %v, want nil or ErrDeleteMisaddressed", err)
			}
			if err != nil {
				mustExist(t, b, tb, dept, "1", "the entity of the refused delete")
			}
			if _, err := repo.SubmitOrSplit(b.ctx, tb.DeleteAction(dept, "1", nil)); err != nil && !errors.Is(err, repo.ErrNotFound) {
				t.Fatal(err)
			}
			if _, gerr := tb.Get(b.ctx, dept, "1"); !errors.Is(gerr, repo.ErrNotFound) {
				t.Fatalf("the deleted entity is still there (%v)", gerr)
			}
			mustExist(t, b, tb, dept, "", "the entity with the empty RowKey")
		})
	}
}

// U+2028 in keys, tracked transaction with a lost response, another writer in between.
func TestTrackedTransactionWithLineSeparatorKeysKnowsItsOutcome(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	pk, rk := "p\u2028k", "r\u2029k'o"
	other := table[Counter](t, b, &repo.Options{TrackWrites: true})
	tbl := table[Counter](t, b, &repo.Options{TrackWrites: true, Logger: onRetry(func() {
		c, err := other.Get(b.ctx, pk, rk)
		if err == nil {
			c.X = 1.5
			err = other.Update(b.ctx, &c, nil)
		}
		if err != nil {
			t.Error(err)
		}
	})})
	b.proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	c := &Counter{PK: pk, RK: rk, N: 1}
	if _, err := repo.Submit(b.ctx, tbl.InsertAction(c), tbl.InsertAction(&Counter{PK: pk, RK: rk + "2"})); err != nil {
		t.Fatal(err)
	}
	c.N = 9
	if err := tbl.Update(b.ctx, c, nil); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("superseded: %v", err)
	}
}
