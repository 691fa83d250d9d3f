package repo_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

func seed(t testing.TB, emps *repo.Table[Employee], b *bed, partitions, each int) {
	t.Helper()
	items := make([]*Employee, 0, partitions*each)
	for p := 0; p < partitions; p++ {
		for i := 0; i < each; i++ {
			e := employee(fmt.Sprintf("Dept%02d", p), fmt.Sprintf("%06d", i))
			e.Age = int32(20 + i%40)
			e.LastName = fmt.Sprintf("Name%03d", i%100)
			items = append(items, e)
		}
	}
	if err := emps.BulkWrite(b.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
}

// More than 1,000 matches span pages; a saved token resumes in a fresh pager (as a new
// process would, from the token alone).
func TestPagingAndResume(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	emps := table[Employee](t, b, nil)
	seed(t, emps, b, 1, 2500)
	q := repo.Query{Filter: filter.PartitionKey("Dept00")}

	n := 0
	prev := ""
	for e, err := range emps.Query(b.ctx, q) {
		if err != nil {
			t.Fatal(err)
		}
		if e.EmployeeID <= prev {
			t.Fatalf("out of order: %q after %q", e.EmployeeID, prev)
		}
		prev = e.EmployeeID
		n++
	}
	if n != 2500 {
		t.Fatalf("iterated %d entities, want 2500", n)
	}

	first, err := emps.Pages(q).Next(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Items) != repo.MaxPageSize || first.Token == "" {
		t.Fatalf("first page: %d items, token %q", len(first.Items), first.Token)
	}
	// A new Table value and pager, from the token alone.
	fresh := table[Employee](t, b, nil)
	resumed := q
	resumed.Token = first.Token
	rest, err := fresh.Collect(b.ctx, resumed)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 1500 || rest[0].EmployeeID != fmt.Sprintf("%06d", 1000) {
		t.Fatalf("resumed: %d items starting at %q", len(rest), rest[0].EmployeeID)
	}

	// Top limits the total; each request asks only for what is still wanted.
	top, err := emps.Collect(b.ctx, repo.Query{Filter: filter.PartitionKey("Dept00"), Top: 1200})
	if err != nil || len(top) != 1200 {
		t.Fatalf("Top 1200: %d items, %v", len(top), err)
	}
	if _, err := emps.Collect(b.ctx, repo.Query{Token: "not-a-token"}); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("bad token: %v", err)
	}
}

// The real service may end a page early, even with no entities, and still continue; the
// fault proxy plays that (Azurite never does).
func TestShortAndEmptyPages(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	emps := table[Employee](t, b, nil)
	seed(t, emps, b, 1, 450)
	b.proxy.EmulatePaging(100, true)
	mark := b.proxy.Count()
	got, err := emps.Collect(b.ctx, repo.Query{Filter: filter.PartitionKey("Dept00")})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range got {
		if seen[e.EmployeeID] {
			t.Fatalf("entity %s seen twice", e.EmployeeID)
		}
		seen[e.EmployeeID] = true
	}
	if len(seen) != 450 {
		t.Fatalf("saw %d entities, want 450", len(seen))
	}
	if n := requestsSince(b.proxy, mark); n < 6 {
		t.Fatalf("only %d requests: the short and empty pages were not exercised", n)
	}
}

// Untrusted values cannot change a filter's structure: a value crafted to widen the query
// matches nothing, on the real server.
func TestFilterInjectionBoundary(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	emps := table[Employee](t, b, nil)
	seed(t, emps, b, 2, 20)
	for _, evil := range []string{
		"x' or PartitionKey ne '",
		"') or (PartitionKey ne '",
		"' or 1 eq 1 or '",
		"x'' or true or ''",
		"Name000' or LastName ne 'y",
	} {
		got, err := emps.Collect(b.ctx, repo.Query{Filter: filter.And(filter.PartitionKey("Dept00"), filter.Eq("LastName", evil))})
		if err != nil {
			t.Fatalf("%q: %v", evil, err)
		}
		if len(got) != 0 {
			t.Fatalf("value %q widened the query to %d entities", evil, len(got))
		}
	}
	// The same shape with a benign value finds its rows.
	got, err := emps.Collect(b.ctx, repo.Query{Filter: filter.And(filter.PartitionKey("Dept00"), filter.Eq("LastName", "Name003"))})
	if err != nil || len(got) != 1 {
		t.Fatalf("benign value: %d rows, %v", len(got), err)
	}
	if _, err := emps.Collect(b.ctx, repo.Query{Filter: filter.Eq("LastName eq 'x' or true", "y")}); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("a property name that is an expression must be refused: %v", err)
	}
}

// EmployeeName is a projection of Employee: the query asks for these properties only.
type EmployeeName struct {
	Department string `table:",pk"`
	EmployeeID string `table:",rk"`
	LastName   string `table:"LastName"`
}

func TestProjectionAndParallelQueries(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	emps := table[Employee](t, b, nil)
	seed(t, emps, b, 4, 30)
	names, err := repo.Project[EmployeeName](emps)
	if err != nil {
		t.Fatal(err)
	}
	mark := len(b.proxy.Requests())
	got, err := names.Collect(b.ctx, repo.Query{Filter: filter.PartitionKey("Dept01")})
	if err != nil || len(got) != 30 || got[0].LastName == "" {
		t.Fatalf("projection: %d rows, %v", len(got), err)
	}
	reqs := b.proxy.Requests()[mark:]
	if len(reqs) != 1 || !containsAll(reqs[0].RawQuery, "%24select=", "LastName") {
		t.Fatalf("projection did not send $select: %+v", reqs)
	}
	if err := names.Insert(b.ctx, &got[0]); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("writing through a projection must be refused: %v", err)
	}

	qs := make([]repo.Query, 4)
	for i := range qs {
		qs[i] = repo.Query{Filter: filter.PartitionKey(fmt.Sprintf("Dept%02d", i))}
	}
	res, err := emps.QueryParallel(b.ctx, qs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if len(r) != 30 || r[0].Department != fmt.Sprintf("Dept%02d", i) {
			t.Fatalf("query %d: %d rows", i, len(r))
		}
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func TestGetMany(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	emps := table[Employee](t, b, nil)
	seed(t, emps, b, 3, 10)
	keys := [][2]string{{"Dept00", "000001"}, {"Dept02", "000009"}, {"Dept01", "nobody"}, {"Dept01", "000000"}}
	got, found, err := emps.GetMany(b.ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		wantFound := k[1] != "nobody"
		if found[i] != wantFound || (wantFound && (got[i].Department != k[0] || got[i].EmployeeID != k[1] || got[i].ETag == "")) {
			t.Fatalf("key %v: found %v, %+v", k, found[i], got[i])
		}
	}
	if _, _, err := emps.GetMany(b.ctx, [][2]string{{"Dept00", "a/b"}}); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("bad key: %v", err)
	}
}

// QueryFunc decodes with the caller's function (a registry of several entity types, in
// patterns/heterogeneous), with the same paging, Top and tokens as Query.
func TestQueryFunc(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	emps := table[Employee](t, b, nil)
	seed(t, emps, b, 1, 25)
	rowKey := func(data []byte) (string, error) {
		e, err := codec.DecodeEntity(data)
		if err != nil {
			return "", err
		}
		return e.RowKey, nil
	}
	var got []string
	for rk, err := range repo.QueryFunc(b.ctx, emps, repo.Query{Filter: filter.PartitionKey("Dept00"), PageSize: 10, Top: 23}, rowKey) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rk)
	}
	if len(got) != 23 || got[0] != "000000" || got[22] != "000022" {
		t.Fatalf("QueryFunc: %d rows %v", len(got), got)
	}
	boom := errors.New("boom")
	for _, err := range repo.QueryFunc(b.ctx, emps, repo.Query{}, func([]byte) (int, error) { return 0, boom }) {
		if !errors.Is(err, boom) {
			t.Fatalf("decode error: %v", err)
		}
		break
	}
}
