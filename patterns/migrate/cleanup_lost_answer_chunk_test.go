package migrate

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
)

// TestLostAnswersOnCleanUpTransactionsAreSettledInTheirChunk: the answers of clean-up's
// first three entity group transactions of old deletes are lost after the service
// applied them. Each chunk settles its own: the retry meets its own deletes, the
// transaction's entities are deleted again one by one (10 per partition, over 12
// partitions), and no chunk outlasts its deadline (chunksStayChunks: the per-entity
// rule never stands in). Every old entity ends deleted and the new layout holds every
// entity.
func TestLostAnswersOnCleanUpTransactionsAreSettledInTheirChunk(t *testing.T) {
	t.Parallel()
	f := setup(t, false, true)
	f.patient(t)
	chunksStayChunks(t, f.m)
	_, md := f.planned(t, 120, 12)
	p := f.b.Proxy()
	p.AddRule(faultproxy.Rule{Name: "lost", Match: testbed.DeletesFrom(f.src.Name()), Times: 3, Action: faultproxy.DropAfterForward()})
	f.advanceTo(t, Done)
	if n := p.Fired("lost"); n != 3 {
		t.Errorf("%d answers lost, want 3: the attack did not happen", n)
	}
	if old, _ := f.rows(t, f.src.Name()); len(old) != 0 {
		t.Errorf("%d old entities left", len(old))
	}
	f.mustHoldExactly(t, md)
}
