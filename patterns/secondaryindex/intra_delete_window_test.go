package secondaryindex_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks Intra.Delete by a copy's key across its read-then-act window: the copy is read
// for the primary value, then the primary copy, then the transaction is sent. Another
// writer changes the entity while Delete is held at the primary's read or at its
// transaction. With the ETag read, the delete is refused (errs.ErrPreconditionFailed,
// "if any copy changed since") and the entity stays whole. Without it, a change that moved
// the copy away leaves no entity under the key named (errs.ErrNotFound, entity kept); a
// change that kept the copy's key is overwritten by the delete (last writer wins).
func TestIntraDeleteByACopysKeyAcrossAConcurrentWrite(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byEmail, byLast) // through the proxy
	live, err := intraOn(b.Direct.Tables, b.Table, byID, []secondaryindex.Index[Employee]{byEmail, byLast}, b.RepoOptions())
	if err != nil {
		t.Fatal(err)
	}
	id := 20
	for _, at := range []string{"primary read", "transaction"} {
		for _, moved := range []bool{true, false} {
			for _, conditional := range []bool{true, false} {
				id++
				name := fmt.Sprintf("held at the %s, email moved %v, conditional %v", at, moved, conditional)
				email := fmt.Sprintf("window%d@contoso.com", id)
				if err := x.Insert(b.Ctx, emp(id, "Win", "Dow", email)); err != nil {
					t.Fatal(err)
				}
				read, err := x.Lookup(b.Ctx, "Sales", "email", email)
				if err != nil {
					t.Fatal(err)
				}
				var opts *repo.DeleteOptions
				if conditional {
					opts = &repo.DeleteOptions{ETag: read.ETag}
				}
				match := faultproxy.IsBatch
				if at == "primary read" {
					match = func(r *http.Request) bool {
						return faultproxy.IsGetEntity(r) && faultproxy.PathContains(fmt.Sprintf("empid_%06d", id))(r)
					}
				}
				ps := b.Proxy().PauseAt(name, match, 1)
				t.Cleanup(ps.Release)
				done := make(chan error, 1)
				go func() { done <- x.Delete(b.Ctx, "Sales", read.RowKey, opts) }()
				testbed.WaitHeld(t, ps)
				cur, err := live.Get(b.Ctx, "Sales", fmt.Sprintf("empid_%06d", id))
				if err != nil {
					t.Fatal(err)
				}
				cur.Age++
				if moved {
					cur.Email = fmt.Sprintf("moved%d@contoso.com", id)
				}
				if err := live.Update(b.Ctx, &cur); err != nil {
					t.Fatal(err)
				}
				ps.Release()
				err = <-done
				_, gerr := x.Get(b.Ctx, "Sales", fmt.Sprintf("empid_%06d", id))
				switch {
				case conditional:
					if !errors.Is(err, repo.ErrPreconditionFailed) || gerr != nil {
						t.Fatalf("%s: delete %v, entity after it %v; want ErrPreconditionFailed and the entity kept", name, err, gerr)
					}
				case moved:
					if !errors.Is(err, repo.ErrNotFound) || gerr != nil {
						t.Fatalf("%s: delete %v, entity after it %v; want ErrNotFound and the entity kept", name, err, gerr)
					}
				default:
					if err != nil || !errors.Is(gerr, repo.ErrNotFound) {
						t.Fatalf("%s: delete %v, entity after it %v; want it deleted", name, err, gerr)
					}
				}
			}
		}
	}
	mustClean(t, b.Ctx, x, 6, "Sales")
}
