package secondaryindex_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
)

// interSpreadDepartments seeds one hot department of hot employees and cold ones of cold
// each, primaries only (no copy, no ref: every entity is to be written), and returns an
// Inter on the proxied clients with the default retry policy, the departments and the
// email index partitions of the cold ones.
func interSpreadDepartments(t *testing.T, b *bed, hot, colds, cold int) (*secondaryindex.Inter[Employee], []string, []string) {
	t.Helper()
	depts := []string{"Hot"}
	var coldParts []string
	for p := range colds {
		depts = append(depts, fmt.Sprintf("Cold%d", p))
		coldParts = append(coldParts, fmt.Sprintf("email_Cold%d", p))
	}
	b.seedEmployeesIn(t, hot+colds*cold, func(i int) string {
		if i < hot {
			return "Hot"
		}
		return depts[1+(i-hot)%colds]
	})
	q, _ := b.Queue()
	x, err := secondaryindex.NewInter(b.Clients.Tables, b.Table, q, []secondaryindex.Index[Employee]{byEmail},
		&secondaryindex.InterOptions{SafetyDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	return x, depts, coldParts
}

// inEachDepartment runs op on every department at once, as the worker's slots run one job
// per partition, and fails the test on the first error.
func inEachDepartment(t *testing.T, ctx context.Context, depts []string, op func(ctx context.Context, pk string) error) {
	t.Helper()
	errs := make([]error, len(depts))
	var wg sync.WaitGroup
	for i, pk := range depts {
		wg.Go(func() { errs[i] = op(ctx, pk) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", depts[i], err)
		}
	}
}

// checkIndexed fails the test unless index partition part holds n copies and n refs.
func checkIndexed(t *testing.T, b *bed, part string, n int) {
	t.Helper()
	if got := len(b.rows(t, part)); got != 2*n {
		t.Errorf("%s holds %d rows, want %d copies and %d refs", part, got, n, n)
	}
}

// throttledInEachDepartment runs op on every department at once, as inEachDepartment
// does, through a model where each partition serves 20 entities/s with a burst of 60 and
// the account has no limit, and returns the model's per-partition counts. The model is
// stopped on return, so that the test's checks read unthrottled.
func throttledInEachDepartment(t *testing.T, b *bed, depts []string, op func(ctx context.Context, pk string) error) faultproxy.ThrottleStats {
	t.Helper()
	model, err := b.Proxies.Table.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: 20, PartitionBurst: 60, AccountRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Stop()
	model.Reset()
	inEachDepartment(t, b.Ctx, depts, op)
	return model.Stats()
}

// checkInterSpreads seeds the layout of interSpreadDepartments (one hot department of hot
// employees, colds cold ones of cold), runs op with its Inter on every department at once
// through throttledInEachDepartment's model, and checks that every copy and ref is
// written and that the writes spread (testenv.CheckSpread, two requests in flight at most
// per partition) over the hot index partition and the cold ones.
func checkInterSpreads(t *testing.T, hot, colds, cold int, op func(x *secondaryindex.Inter[Employee], ctx context.Context, pk string) error) {
	t.Helper()
	b := setup(t, true)
	x, depts, coldParts := interSpreadDepartments(t, b, hot, colds, cold)
	st := throttledInEachDepartment(t, b, depts, func(ctx context.Context, pk string) error { return op(x, ctx, pk) })
	checkIndexed(t, b, "email_Hot", hot)
	for _, part := range coldParts {
		checkIndexed(t, b, part, cold)
	}
	testenv.CheckSpread(t, st, 2, "email_Hot", coldParts)
}

// An Inter backfill runs its reconciliations on retry.Schedule, keyed by the index
// partition they write: every entity of partition pk has its email copy in email_<pk>.
// One hot department (50 employees) and six cold ones (10 each: their partitions' reads
// and writes stay within a partition's burst of 60 entities, so that only the hot one can
// be refused) are backfilled at once, one BackfillPartition per department as the
// worker's slots run them, through a model where each partition serves 20 entities/s and
// the account has no limit, with the default retry policy. From the model's per-partition counts: no partition ever has more
// than two requests in flight, the hot index partition is refused, and every cold one is
// written before the hot one ends; every copy and ref is written.
func TestInterBackfillSpreadsWritesOverPartitions(t *testing.T) {
	t.Parallel()
	checkInterSpreads(t, 50, 6, 10, func(x *secondaryindex.Inter[Employee], ctx context.Context, pk string) error {
		_, err := x.BackfillPartition(ctx, pk, nil)
		return err
	})
}

// Inter's Repair runs its reconciliations on retry.Schedule too: the same layout as
// TestInterBackfillSpreadsWritesOverPartitions (a hot department of 30 employees, six
// cold ones of 6: a repaired entity costs its reconciliation and a forced one), every
// copy missing, repaired one Repair per department at once
// through the model, holds the same bounds, and every copy and ref is written.
func TestInterRepairSpreadsWritesOverPartitions(t *testing.T) {
	t.Parallel()
	checkInterSpreads(t, 30, 6, 6, func(x *secondaryindex.Inter[Employee], ctx context.Context, pk string) error {
		_, err := x.Repair(ctx, pk, nil)
		return err
	})
}

// Intra's BackfillPartition writes one partition, the entity's own, one transaction per
// entity, on retry.Schedule keyed by that partition: the layout of
// TestInterBackfillSpreadsWritesOverPartitions (a hot department of 50 employees, six
// cold ones of 10, primary copies only), one BackfillPartition per department at once
// through the model, holds the same bounds, and every email copy is written.
func TestIntraBackfillPartitionSpreadsWritesOverPartitions(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	const hot, colds, cold = 50, 6, 10
	depts := []string{"Hot"}
	for p := range colds {
		depts = append(depts, fmt.Sprintf("Cold%d", p))
	}
	var items []*Employee
	for d, dept := range depts {
		n := cold
		if d == 0 {
			n = hot
		}
		for range n {
			e := emp(len(items), "First", "Last", fmt.Sprintf("employee%05d@contoso.com", len(items)))
			e.Department = dept
			items = append(items, e)
		}
	}
	if err := b.intra(t).Backfill(b.Ctx, items); err != nil { // primary copies only
		t.Fatal(err)
	}
	tb, err := repo.New[Employee](b.Clients.Tables, b.Table, nil)
	if err != nil {
		t.Fatal(err)
	}
	x, err := secondaryindex.NewIntra(tb, byID, []secondaryindex.Index[Employee]{byEmail}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := throttledInEachDepartment(t, b, depts, func(ctx context.Context, pk string) error {
		_, err := x.BackfillPartition(ctx, pk, nil)
		return err
	})
	for d, dept := range depts {
		n := cold
		if d == 0 {
			n = hot
		}
		if got := len(b.rows(t, dept)); got != 2*n {
			t.Errorf("%s holds %d rows, want %d primary copies and %d email copies", dept, got, n, n)
		}
	}
	testenv.CheckSpread(t, st, 2, "Hot", depts[1:])
}
