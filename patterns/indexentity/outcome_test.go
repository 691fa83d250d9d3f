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
