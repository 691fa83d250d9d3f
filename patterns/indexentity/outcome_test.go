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
// meets a conflict (issue 10). landed says whether that first transaction really applied:
// when not, the proxy refuses it (412) before it reaches the table.
func unknownOnce(b *bed, ix *SamePartition[Employee], step string, landed bool) {
	b.t.Helper()
	if !landed {
		b.tableProxy().AddRule(faultproxy.Rule{Name: "refused", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.Respond(http.StatusPreconditionFailed, "UpdateConditionNotSatisfied")})
	}
	done := false
	ix.afterSubmit = func(s string, err error) error {
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

// Issue 10, item 9, for option 2: a transaction whose outcome repo cannot prove
// (ErrOutcomeUnknown) is re-decided from a fresh read of the entity (the transaction is
// atomic, so the entity shows whether the index changed with it): Insert retries what
// did not land and reports the unknown outcome of what did (never "nothing written");
// Delete reports success once the entity is gone; Update without an ETag writes again.
// The index stays exact in every case.
func TestSamePartitionOutcomeUnknownIsRedecided(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		step    string
		landed  bool
		wantErr bool
	}{
		{"insert", true, true},
		{"insert", false, false},
		{"delete", true, false},
		{"delete", false, false},
		{"update", true, false},
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
			if ids, err := ix.IDs(b.Ctx, "Sales", "Jones"); err != nil || !slices.Equal(ids, want) {
				t.Fatalf("Jones lists %v (%v), want %v", ids, err, want)
			}
		})
	}
}
