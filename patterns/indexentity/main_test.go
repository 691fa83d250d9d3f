package indexentity

import (
	"fmt"
	"iter"
	"slices"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Employee is the guide's employee entity: department as PartitionKey, employee id as
// RowKey, indexed by last name.
type Employee struct {
	Department string `table:",pk"`
	EmployeeID string `table:",rk"`
	FirstName  string `table:"FirstName"`
	LastName   string `table:"LastName"`
	Age        int32  `table:"Age"`
	Email      string `table:"Email"`
	ETag       string `table:",etag"`
}

func lastName(e *Employee) string { return e.LastName }

func emp(dept, id, last string) *Employee {
	return &Employee{Department: dept, EmployeeID: id, FirstName: "Jun", LastName: last, Age: 34, Email: id + "@contoso.com"}
}

// fast keeps transient retries short in tests.
var fast = testbed.FastRetry()

// bed is one test's storage (a fresh table, reached directly or through the fault
// proxies), with the table of employees the indexes are built on.
type bed struct {
	*testbed.Bed
	t    *testing.T
	emps *repo.Table[Employee]
	log  *zap.Logger
}

func setup(t *testing.T, proxied bool) *bed {
	t.Helper()
	b := &bed{Bed: testbed.New(t, &testbed.Options{Proxied: proxied}), t: t, log: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))}
	b.emps = must(repo.New[Employee](b.Clients.Tables, b.Table, &repo.Options{Retry: fast, Logger: b.log}))
	return b
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// tableProxy returns the table service's proxy, failing the test if the bed is not proxied.
func (b *bed) tableProxy() *faultproxy.Proxy {
	if b.Proxies == nil {
		b.t.Fatal("bed is not proxied")
	}
	return b.Proxies.Table
}

func (b *bed) samePartition(opts *SamePartitionOptions) *SamePartition[Employee] {
	b.t.Helper()
	ix, err := NewSamePartition(b.emps, "LastName", lastName, opts)
	if err != nil {
		b.t.Fatal(err)
	}
	return ix
}

// queue creates a fresh queue (deleted with its poison queue by t.Cleanup) and returns a
// client that enqueues on it.
func (b *bed) queue() *queueworker.Client {
	b.t.Helper()
	c, _ := b.Queue()
	return c
}

// drain runs a worker with the given registrations until the queue is empty.
func (b *bed) drain(q *queueworker.Client, register ...func(*queueworker.Registry) error) *queueworker.Worker {
	b.t.Helper()
	w := b.Worker(q, register...)
	testbed.Drain(b.t, w)
	return w
}

// truth derives, from the primaries, what index option 2 must hold in partition pk:
// value -> sorted ids.
func (b *bed) truth(pk string) map[string][]string {
	b.t.Helper()
	all, err := b.emps.Collect(b.Ctx, repo.Query{Filter: filter.PartitionKey(pk)})
	if err != nil {
		b.t.Fatal(err)
	}
	out := map[string][]string{}
	for _, e := range all {
		if e.EmployeeID >= "idx" && e.EmployeeID < "idy" {
			continue // an index entity decoded as Employee
		}
		if e.LastName != "" {
			out[e.LastName] = append(out[e.LastName], e.EmployeeID)
		}
	}
	for _, ids := range out {
		slices.Sort(ids)
	}
	return out
}

// indexPages returns the raw index entities of partition pk.
func (b *bed) indexPages(ix *SamePartition[Employee], pk string) []codec.Entity {
	b.t.Helper()
	lo, hi := ix.KeyRange()
	pages, err := ix.pages.tbl.Collect(b.Ctx, repo.Query{Filter: filter.RowKeyRange(pk, lo, hi)})
	if err != nil {
		b.t.Fatal(err)
	}
	return pages
}

// checkIndex asserts that the index of partition pk lists exactly the ids the primaries
// say, value by value, and that no page is empty or over capacity.
func (b *bed) checkIndex(ix *SamePartition[Employee], pk string) {
	b.t.Helper()
	want := b.truth(pk)
	got := map[string][]string{}
	for _, p := range b.indexPages(ix, pk) {
		raw, _ := p.Properties["IDs"].(string)
		if raw == "" {
			b.t.Errorf("index entity %q is empty", p.RowKey)
		}
		if n := utf16Bytes(raw); n > ix.pages.capacity {
			b.t.Errorf("index entity %q holds %d bytes, capacity %d", p.RowKey, n, ix.pages.capacity)
		}
	}
	for value := range want {
		ids, err := ix.IDs(b.Ctx, pk, value)
		if err != nil {
			b.t.Fatal(err)
		}
		got[value] = ids
	}
	for value, ids := range want {
		if !slices.Equal(got[value], ids) {
			b.t.Errorf("index %s/%s: got %d ids %v, want %d %v", pk, value, len(got[value]), clip(got[value]), len(ids), clip(ids))
		}
	}
	// No value outside the truth may be listed either.
	for _, p := range b.indexPages(ix, pk) {
		found := false
		for value := range want {
			lo, hi, _ := loHi(ix, value)
			if p.RowKey >= lo && p.RowKey < hi {
				found = true
			}
		}
		if !found {
			b.t.Errorf("index entity %q lists a value no entity has: %q", p.RowKey, p.Properties["IDs"])
		}
	}
}

func loHi(ix *SamePartition[Employee], value string) (string, string, error) {
	l, err := ix.location("x", value)
	return l.lo, l.hi, err
}

func clip(s []string) []string {
	if len(s) > 8 {
		return append(slices.Clone(s[:8]), fmt.Sprintf("... (%d more)", len(s)-8))
	}
	return s
}

// collect runs a Find to its end: the entities it yields, or its first error.
func collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}
