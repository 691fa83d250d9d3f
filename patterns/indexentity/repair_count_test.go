package indexentity

import (
	"net/http"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// Report.Repaired counts the entities whose listing Repair wrote, also when Repair stops
// at a failure. Two entities of one partition, neither listed, are repaired at once:
// entity 000002's transaction is held at the proxy (detached: were its client to give
// up, it would go on to the service, as the service does with a request already sent),
// then entity 000001's transaction is refused (403). The failure starts no new call but
// leaves 000002's running: the test releases it once the failure is recorded, it lands,
// and Repaired counts it, so that Repaired equals what Verify finds fixed since.
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
	ix.seams.stopped = held.Release
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
	if fixed := r.Missing - after.Missing; r.Repaired != fixed || fixed != 1 {
		t.Fatalf("Repair reported Repaired %d (error %v); Verify finds %d of its %d missing entities listed since, want 1 (000002)", r.Repaired, err, fixed, r.Missing)
	}
}
