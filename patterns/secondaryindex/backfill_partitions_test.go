package secondaryindex_test

import (
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
)

// An index backfill writes its copies through one BulkWrite (retry.Schedule): one hot
// department (600 employees, 1,200 copies with the email index) and eight cold ones (50
// employees, 100 copies each, within a partition's burst, so that only the hot one can be
// refused), backfilled through a model where each partition serves 100 entities/s and the
// account has no limit, with the default retry policy. From the model's per-partition
// counts: no partition ever has more than two transactions in flight, the hot partition
// is refused, and every cold partition is written before the hot one ends; every copy
// is written.
func TestIntraBackfillSpreadsWritesOverPartitions(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	tb, err := repo.New[Employee](b.Clients.Tables, b.Table, nil)
	if err != nil {
		t.Fatal(err)
	}
	x, err := secondaryindex.NewIntra(tb, byID, []secondaryindex.Index[Employee]{byEmail}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const hot, cold, hotN, coldN = "Hot", 8, 600, 50
	var items []*Employee
	add := func(dept string, n int) {
		for range n {
			e := emp(len(items), "First", "Last", fmt.Sprintf("employee%05d@contoso.com", len(items)))
			e.Department = dept
			items = append(items, e)
		}
	}
	add(hot, hotN)
	var colds []string
	for p := range cold {
		dept := fmt.Sprintf("Cold%d", p)
		colds = append(colds, dept)
		add(dept, coldN)
	}
	model, err := b.Proxies.Table.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: 100, AccountRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Stop()
	model.Reset()
	if err := x.Backfill(b.Ctx, items); err != nil {
		t.Fatal(err)
	}
	st := model.Stats()
	if want := int64(2 * len(items)); st.Total.AdmittedEntities != want {
		t.Fatalf("the model admitted %d entities, want %d copies", st.Total.AdmittedEntities, want)
	}
	testenv.CheckSpread(t, st, 2, hot, colds)
}
