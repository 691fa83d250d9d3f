package consistency

import (
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// A range archive's page runs its batches through retry.Schedule: one hot partition
// (500 entities, five batches) and five cold ones (100 each) in one page, archived
// through a model where each partition serves 100 entities/s with a burst of 250 (the
// copy in the target table and the source's delete both count against the partition's
// PartitionKey: a cold batch, 202 entity operations with its two reads, fits the burst,
// so only the hot partition can be refused) and the account has no limit. From the model's per-partition counts: no partition ever has more
// than two batches' requests in flight, the hot partition is refused, and every cold
// partition is done before the hot one ends (they run beside it, not behind it or at its
// pace); every entity moves.
func TestRangeArchiveSpreadsBatchesOverPartitions(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	const hot, cold, hotN, coldN = "P-hot", 5, 500, 100
	b.loadRange(t, []string{hot}, hotN)
	var colds []string
	for p := range cold {
		colds = append(colds, fmt.Sprintf("P-cold%d", p))
	}
	b.loadRange(t, colds, coldN)
	a, err := New(b.clients, nil) // the default retry policy, as a worker runs it
	if err != nil {
		t.Fatal(err)
	}
	model, err := ps.Table.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: 100, PartitionBurst: 250, AccountRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Stop()
	model.Reset()
	rep, err := a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: b.current.Name(), PartitionKeyFrom: "P-", PartitionKeyTo: "P.", TargetTable: b.archive.Name()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Moved != hotN+cold*coldN {
		t.Fatalf("moved %d, want %d (report %+v)", rep.Moved, hotN+cold*coldN, rep)
	}
	testenv.CheckSpread(t, model.Stats(), 2, hot, colds) // a batch sends one request at a time
}
