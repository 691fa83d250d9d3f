package tablearchive

import (
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// A restore writes its window of partitions through one BulkWrite (retry.Schedule): an
// archived table of one hot partition (200 entities: four times its burst, so that it
// is refused and paced for seconds) and eight cold ones (50 each, within a partition's
// burst, so that only the hot one can be refused), restored through
// a model where each partition serves 50 entities/s and the account has no limit. From
// the model's per-partition counts: no partition ever has more than two transactions in
// flight, the hot partition is refused, and every cold partition is written before the
// hot one ends (beside it, not behind it or at its pace); every entity is restored.
func TestRestoreSpreadsWritesOverPartitions(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	const hot, cold, hotN, coldN = "P-hot", 8, 200, 50
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
	model, err := ps.Table.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: 50, AccountRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Stop()
	model.Reset()
	if _, err := a.RestoreTable(b.ctx, RestoreTableJob{Table: b.current.Name(), Container: container, Target: b.archive.Name()}); err != nil {
		t.Fatal(err)
	}
	st := model.Stats()
	// At least every entity: a transaction the client sends again (its answer did not
	// reach it) is admitted again.
	if st.Total.AdmittedEntities < int64(len(items)) {
		t.Fatalf("the model admitted %d entities, want at least %d", st.Total.AdmittedEntities, len(items))
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

// A restore of a sharded generation writes each window of the generation, whatever
// shards it spans, through one BulkWrite (one retry.Schedule): a table of one hot
// partition (200 entities) and twelve cold ones (50 each, within a partition's burst)
// archived in four shards (the hot partition alone in the last), restored through the
// model of TestRestoreSpreadsWritesOverPartitions, each transaction held 200 ms by the
// proxy (so that the shards' transactions would overlap if each shard had its own
// Schedule). From the transactions the client sent: never more than the Schedule's
// Concurrency (8) in flight at once; from the model's per-partition counts: no
// partition with more than two, the hot partition refused, and every cold partition
// written before the hot one ends; every entity is restored.
func TestRestoreOfShardedGenerationPacesEveryShardOnOneSchedule(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	sb := setupShardsAt(t, ps.ConnectionString, 0)
	const hot, cold, hotN, coldN = "P-hot", 12, 200, 50
	var items []*codec.Entity
	parts := []string{hot}
	var colds []string
	for i := range hotN {
		items = append(items, employee(hot, fmt.Sprintf("%05d", i), 30))
	}
	for p := range cold {
		pk := fmt.Sprintf("P-cold%02d", p)
		colds = append(colds, pk)
		for i := range coldN {
			items = append(items, employee(pk, fmt.Sprintf("%05d", i), 40))
		}
	}
	parts = append(parts, colds...)
	if err := sb.current.BulkWrite(sb.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	cj, plan := sb.exportShards(t, sb.container, 4)
	if plan.shards() != 4 || plan.Bounds[len(plan.Bounds)-1] != hot {
		t.Fatalf("plan %+v, want four shards, the hot partition alone in the last", plan)
	}
	sb.combined(t, cj)
	load := newPartitionLoad(parts)
	clients, err := account.NewClients(ps.ConnectionString, &account.ClientOptions{Transport: load})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(clients, nil) // the default retry policy, as a worker runs it
	if err != nil {
		t.Fatal(err)
	}
	ps.Table.AddRule(faultproxy.Rule{Name: "slow transactions", Match: faultproxy.IsBatch, Action: faultproxy.Delay(200 * time.Millisecond)})
	model, err := ps.Table.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: 50, AccountRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Stop()
	model.Reset()
	target := sb.newTable(t, "Back")
	if _, err := a.RestoreTable(sb.ctx, RestoreTableJob{Table: sb.current.Name(), Container: sb.container, Target: target.Name()}); err != nil {
		t.Fatal(err)
	}
	st := model.Stats()
	// At least every entity: a transaction the client sends again (its answer did not
	// reach it) is admitted again.
	if st.Total.AdmittedEntities < int64(len(items)) {
		t.Fatalf("the model admitted %d entities, want at least %d", st.Total.AdmittedEntities, len(items))
	}
	_, maxBatch, _, _ := load.stats()
	if maxBatch > 8 {
		t.Errorf("%d transactions in flight at once, want at most 8 (one Schedule's Concurrency): the shards were written on a Schedule each", maxBatch)
	}
	testenv.CheckSpread(t, st, 2, hot, colds)
	got, err := target.Collect(sb.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(items) {
		t.Fatalf("restored %d entities, want %d", len(got), len(items))
	}
	t.Logf("at most %d transactions in flight", maxBatch)
}
