package indexentity

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// batchFor selects the transactions that write the entity of RowKey rk.
func batchFor(rk string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		if !faultproxy.IsBatch(r) {
			return false
		}
		body, _ := io.ReadAll(r.Body)
		return bytes.Contains(body, []byte("RowKey='"+rk+"'"))
	}
}

// Report.Repaired "counts the entities whose listing Repair wrote", and each documents
// only that "the first error stops the calls not yet started". Two entities of one
// partition, neither listed, are repaired at once: entity 000002's transaction is held
// at the proxy (and goes on to the service when its client gives up, as the service
// does), then entity 000001's transaction is refused (403). retry.Schedule cancels the
// context of the running call too, so 000002's call ends with its context's error while
// its transaction lands: Verify then finds 000002 listed, and Repair reported
// Repaired 0.
func TestSamePartitionRepairCountsEveryEntityItWrote(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	const pk = "Dept"
	if err := b.emps.BulkWrite(b.Ctx, []*Employee{emp(pk, "000001", "Alpha"), emp(pk, "000002", "Beta")}, nil); err != nil {
		t.Fatal(err)
	}
	ix := b.samePartition(nil)
	p := b.tableProxy()
	var held *faultproxy.Pause
	p.AddRule(faultproxy.Rule{Name: "refuse 000001", Times: 1, Action: faultproxy.Respond(http.StatusForbidden, "AuthorizationFailure"),
		Match: func(r *http.Request) bool {
			if !batchFor("000001")(r) {
				return false
			}
			select { // refused only once 000002's transaction is on its way
			case <-held.Reached():
			case <-r.Context().Done():
			}
			return true
		}})
	held = p.PauseAt("hold 000002", batchFor("000002"), 1)
	held.Detach()
	t.Cleanup(held.Release)
	r, err := ix.Repair(b.Ctx, pk, nil)
	if err == nil {
		t.Fatal("Repair succeeded although 000001's transaction was refused")
	}
	if err := p.WaitIdle(b.Ctx); err != nil {
		t.Fatal(err)
	}
	after, verr := ix.Verify(b.Ctx, pk, nil)
	if verr != nil {
		t.Fatal(verr)
	}
	if fixed := r.Missing - after.Missing; r.Repaired != fixed {
		t.Fatalf("Repair reported Repaired %d (error %v); Verify finds %d of its %d missing entities listed since", r.Repaired, err, fixed, r.Missing)
	}
}
