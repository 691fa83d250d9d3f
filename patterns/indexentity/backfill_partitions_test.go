package indexentity

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// throttleModel starts the fault proxy's model of the partition targets for a
// backfill's spread: each partition serves rate entities/s with a burst of burst, the
// account has no limit.
func (b *bed) throttleModel(rate, burst float64) *faultproxy.Throttle {
	b.t.Helper()
	model, err := b.tableProxy().EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: rate, PartitionBurst: burst, AccountRate: -1})
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(model.Stop)
	model.Reset()
	return model
}

// seedHotAndCold writes, on the direct clients (unthrottled), hot employees named "Hot"
// and cold ones for each of colds names "Cold0", "Cold1", ..., built by build(name, i) with
// i counting employees across names, and returns the names, "Hot" first, and the table
// on the direct clients.
func (b *bed) seedHotAndCold(hot, colds, cold int, build func(name string, i int) *Employee) ([]string, *repo.Table[Employee]) {
	b.t.Helper()
	names := []string{"Hot"}
	for d := range colds {
		names = append(names, fmt.Sprintf("Cold%d", d))
	}
	var items []*Employee
	for d, name := range names {
		n := cold
		if d == 0 {
			n = hot
		}
		for range n {
			items = append(items, build(name, len(items)))
		}
	}
	direct := must(repo.New[Employee](b.Direct.Tables, b.Table, &repo.Options{Retry: fast}))
	if err := direct.BulkWrite(b.Ctx, items, nil); err != nil {
		b.t.Fatal(err)
	}
	return names, direct
}

// Option 2's BackfillPartition writes one partition, the entities' own (each entity and
// its value's index entity in one transaction), on retry.Schedule keyed by it. One hot
// department (50 employees) and six cold ones (10 each: their reads and writes stay
// within a partition's burst, so that only the hot one can be refused), every employee
// with a last name of its own, are backfilled at once, one BackfillPartition per
// department as the worker's slots run them, through the model, with the default retry
// policy. From the model's per-partition counts: no partition ever has more than two
// requests in flight, the hot one is refused, and every cold one is written before the
// hot one ends; every entity is listed.
func TestSamePartitionBackfillSpreadsWritesOverPartitions(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	depts, _ := b.seedHotAndCold(50, 6, 10, func(name string, i int) *Employee {
		return emp(name, fmt.Sprintf("%06d", i), fmt.Sprintf("Last%06d", i))
	})
	ix, err := NewSamePartition(must(repo.New[Employee](b.Clients.Tables, b.Table, nil)), "LastName", lastName, nil)
	if err != nil {
		t.Fatal(err)
	}
	model := b.throttleModel(20, 60)
	inEachPartition(t, b.Ctx, depts, func(ctx context.Context, pk string) error {
		_, err := ix.BackfillPartition(ctx, pk, nil)
		return err
	})
	st := model.Stats()
	model.Stop()
	for _, pk := range depts {
		b.checkIndex(ix, pk)
	}
	testenv.CheckSpread(t, st, 2, "Hot", depts[1:])
}

// Option 3's BackfillPartition writes its entities' lists, one partition per value, on
// retry.Schedule keyed by the list each entity's value names. One department whose
// employees are 50 Hots and 6 each of six cold names, read directly (so that the model
// sees the lists' partitions only), backfilled through a model where a list serves 8
// entity operations/s with a burst of 24 (a cold list's 15 or so operations fit its
// burst; the hot list's 125 outrun its rate unless the client sends fewer than 10 a
// second, so a loaded machine still meets the refusal) with the default retry policy:
// no list partition ever has more than two requests in flight, the hot list is refused,
// every cold list is written before the hot one ends, and every employee is listed.
func TestEventualBackfillSpreadsWritesOverLists(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	const hot, cold = 50, 6
	names, direct := b.seedHotAndCold(hot, 6, cold, func(name string, i int) *Employee {
		return emp("Sales", fmt.Sprintf("%06d", i), name)
	})
	store := must(NewTableStore(must(repo.New[codec.Entity](b.Clients.Tables, b.NewTableName(), nil)), "LastName", nil))
	ix, err := NewEventual(direct, "LastName", lastName, store, b.queue(), nil)
	if err != nil {
		t.Fatal(err)
	}
	lists := make([]string, len(names))
	for i, name := range names {
		lists[i] = must(store.PartitionKey(name))
	}
	model := b.throttleModel(8, 24)
	if _, err := ix.BackfillPartition(b.Ctx, "Sales", nil); err != nil {
		t.Fatal(err)
	}
	st := model.Stats()
	model.Stop()
	for i, name := range names {
		want := cold
		if i == 0 {
			want = hot
		}
		if got := len(must(store.Keys(b.Ctx, name))); got != want {
			t.Errorf("%s lists %d employees, want %d", name, got, want)
		}
	}
	testenv.CheckSpread(t, st, 2, lists[0], lists[1:])
}

// inEachPartition runs op on every partition at once, as the worker's slots run one job
// per partition, and fails the test on the first error.
func inEachPartition(t *testing.T, ctx context.Context, pks []string, op func(ctx context.Context, pk string) error) {
	t.Helper()
	errs := make([]error, len(pks))
	var wg sync.WaitGroup
	for i, pk := range pks {
		wg.Go(func() { errs[i] = op(ctx, pk) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", pks[i], err)
		}
	}
}
