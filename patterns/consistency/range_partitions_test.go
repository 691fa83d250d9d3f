package consistency

import (
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// A range archive's page runs its batches through retry.Schedule: one hot partition
// (500 entities, five batches) and five cold ones (100 each) in one page, archived
// through a model where each partition serves 100 entities/s (the copy in the target
// table and the source's delete both count against the partition's PartitionKey) and the
// account has no limit. From the model's per-partition counts: no partition ever has more
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
	model, err := ps.Table.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: 100, AccountRate: -1})
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
	checkSpread(t, model.Stats(), hot, colds)
}

// checkSpread checks from the model's per-partition counts that no partition had more
// than two requests in flight at once (retry.Schedule's default bound per partition; a
// batch sends one request at a time), that the hot partition was refused, and that every
// cold partition's last admitted request came in an earlier second than the hot one's.
func checkSpread(t *testing.T, st faultproxy.ThrottleStats, hot string, colds []string) {
	t.Helper()
	for part, n := range st.PartitionMaxInFlight {
		if n > 2 {
			t.Errorf("partition %q had %d requests in flight at once, want at most 2", part, n)
		}
	}
	if st.Partitions[hot].RefusedRequests == 0 {
		t.Fatalf("the hot partition was never refused: the model did not throttle it (%v)", st.PartitionSeconds[hot])
	}
	lastHot := lastAdmitted(st.PartitionSeconds[hot])
	for _, part := range colds {
		if last := lastAdmitted(st.PartitionSeconds[part]); last >= lastHot {
			t.Errorf("cold partition %s was still admitted in second %d, when the hot one ended (second %d): it waited behind the hot one or at its pace",
				part, last, lastHot)
		}
	}
	sent := st.Total.AdmittedRequests + st.Total.RefusedRequests
	t.Logf("%d requests sent for %d admitted (%.2fx) in %d s; hot partition: %d refused; in flight per partition: %v", sent, st.Total.AdmittedRequests,
		float64(sent)/float64(st.Total.AdmittedRequests), len(st.Seconds), st.Partitions[hot].RefusedRequests, st.PartitionMaxInFlight)
}

// lastAdmitted returns the last second in which a request was admitted, -1 if none.
func lastAdmitted(secs []faultproxy.Counts) int {
	for i := len(secs) - 1; i >= 0; i-- {
		if secs[i].AdmittedRequests > 0 {
			return i
		}
	}
	return -1
}
