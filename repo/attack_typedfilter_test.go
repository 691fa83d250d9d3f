package repo_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
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

func TestAttackTypedFilterValidNamesRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	tbl := table[Keywordy](t, b, nil)
	if err := tbl.Insert(b.ctx, &Keywordy{PK: "p", RK: "r", Sub: 3, Not: true, Inf: "i"}); err != nil {
		t.Fatalf("codec refuses the type: %v", err)
	}
	for _, f := range []filter.Expr{filter.Eq("Sub", int32(3)), filter.Eq("Not", true), filter.Eq("Inf", "i")} {
		got, err := tbl.Collect(b.ctx, repo.Query{Filter: f})
		if err != nil || len(got) != 1 {
			t.Errorf("filter %v on a property the codec stores: %d, %v", f, len(got), err)
		}
	}
	// Select of Timestamp and the keys; a dynamic table with a property named like a Go field.
	if _, err := tbl.Collect(b.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey", "Timestamp", "Sub"}}); err != nil {
		t.Errorf("select keys: %v", err)
	}
	dyn := table[codec.Entity](t, b, nil)
	if _, err := dyn.Collect(b.ctx, repo.Query{Filter: filter.Gt("Timestamp", int64(1))}); !errors.Is(err, repo.ErrInvalidInput) {
		t.Logf("dynamic table: Timestamp compared with an Int64 -> %v", err)
	}
}
