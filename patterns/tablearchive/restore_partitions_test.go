package tablearchive

import (
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// A restore writes its window of partitions through one BulkWrite (retry.Schedule): an
// archived table of one hot partition (1,200 entities) and eight cold ones (100 each,
// within a partition's burst, so that only the hot one can be refused), restored through
// a model where each partition serves 100 entities/s and the account has no limit. From
// the model's per-partition counts: no partition ever has more than two transactions in
// flight, the hot partition is refused, and every cold partition is written before the
// hot one ends (beside it, not behind it or at its pace); every entity is restored.
func TestRestoreSpreadsWritesOverPartitions(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	const hot, cold, hotN, coldN = "P-hot", 8, 1200, 100
	var items []*codec.Entity
	var colds []string
	for i := range hotN {
		items = append(items, employee(hot, fmt.Sprintf("%05d", i), 30))
	}
	for p := range cold {
		pk := fmt.Sprintf("P-cold%d", p)
		colds = append(colds, pk)
		for i := range coldN {
			items = append(items, employee(pk, fmt.Sprintf("%05d", i), 40))
		}
	}
	if err := b.current.BulkWrite(b.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	container := testenv.ContainerName(t)
	if _, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: b.current.Name(), Container: container, Sealed: true}); err != nil {
		t.Fatal(err)
	}
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
	if _, err := a.RestoreTable(b.ctx, RestoreTableJob{Table: b.current.Name(), Container: container, Target: b.archive.Name()}); err != nil {
		t.Fatal(err)
	}
	st := model.Stats()
	if st.Total.AdmittedEntities != int64(len(items)) {
		t.Fatalf("the model admitted %d entities, want %d", st.Total.AdmittedEntities, len(items))
	}
	testenv.CheckSpread(t, st, 2, hot, colds)
	got, err := b.archive.Collect(b.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(items) {
		t.Fatalf("restored %d entities, want %d", len(got), len(items))
	}
}
