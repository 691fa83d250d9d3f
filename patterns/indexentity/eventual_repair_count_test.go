package indexentity

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// TestEventualRepairCountsAnEntityItWroteBeforeItFailed: Report.Repaired counts every
// entity whose listing Repair wrote, also one whose reconciliation wrote and then
// failed. An entity renamed around the index is listed under its old value only; its
// repair adds it to its new value's list (written, confirmed), then its removal from the
// old value's list is refused (403). Repair fails, and Repaired counts the entity whose
// new listing it wrote.
func TestEventualRepairCountsAnEntityItWroteBeforeItFailed(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	s := b.tableStore(0)
	ix := b.eventual(s, b.queue())
	const pk, rk = "Sales", "000001"
	e := emp(pk, rk, "Oldname")
	if err := b.emps.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(b.Ctx, "Oldname", k(pk, rk)); err != nil {
		t.Fatal(err)
	}
	e.LastName = "Newname"
	if err := b.emps.Update(b.Ctx, e, nil); err != nil {
		t.Fatal(err)
	}
	p := b.tableProxy()
	p.AddRule(faultproxy.Rule{Name: "refuse removal", Times: 1, Action: faultproxy.Respond(http.StatusForbidden, "AuthorizationFailure"),
		Match: func(r *http.Request) bool {
			if !faultproxy.IsBatch(r) {
				return false
			}
			body, _ := io.ReadAll(r.Body)
			return bytes.Contains(body, []byte("Oldname"))
		}})
	r, err := ix.Repair(b.Ctx, pk, nil)
	if err == nil {
		t.Fatal("Repair succeeded although the removal was refused")
	}
	if p.Fired("refuse removal") != 1 {
		t.Fatal("the removal was never refused: the attack did not happen")
	}
	listed, kerr := s.Keys(b.Ctx, "Newname")
	if kerr != nil {
		t.Fatal(kerr)
	}
	if !slices.Contains(listed, k(pk, rk)) {
		t.Fatalf("the new listing was not written (%v): the attack did not happen", listed)
	}
	if r == nil || r.Repaired != 1 {
		t.Errorf("Repair wrote the new listing of one entity, then failed (%v); Report = %+v, want Repaired 1", err, r)
	}
}
