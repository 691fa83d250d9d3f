package repo_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// Values with quotes and OData syntax never change the filter's structure.
func TestAttackTypedFilterInjection(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	emps := table[Employee](t, b, nil)
	for _, id := range []string{"1", "2"} {
		if err := emps.Insert(b.ctx, employee("Sales", id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []string{"x' or RowKey ne '", "x'' or true or ''", "Jones' or 'a' eq 'a", "')or(true", "%27 or true", "\u02bc or true", "x\x00' or true"} {
		got, err := emps.Collect(b.ctx, repo.Query{Filter: filter.And(filter.PartitionKey("Sales"), filter.Eq("LastName", v))})
		if err == nil && len(got) != 0 {
			t.Errorf("value %q matched %d entities", v, len(got))
		}
	}
	mark := b.proxy.Count()
	for _, name := range []string{"LastName eq 'x' or RowKey", "Last'Name", "(LastName)", "LastName\u0000"} {
		if _, err := emps.Collect(b.ctx, repo.Query{Filter: filter.Eq(name, "x")}); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("name %q: %v", name, err)
		}
		if _, err := emps.Collect(b.ctx, repo.Query{Select: []string{name}}); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("select %q: %v", name, err)
		}
	}
	if n := requestsSince(b.proxy, mark); n != 0 {
		t.Errorf("%d requests for refused queries", n)
	}
}

// Keyword-like stored names the codec accepts: can a query filter on them?
type Keywordy struct {
	PK  string `table:",pk"`
	RK  string `table:",rk"`
	Sub int32  `table:"Sub"`
	Not bool   `table:"Not"`
	Inf string `table:"Inf"`
}
