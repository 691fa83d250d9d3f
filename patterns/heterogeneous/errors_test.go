package heterogeneous_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/heterogeneous"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Bad input is refused before any request.
func TestInvalidInputSendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, layouts[1]) // RowKey prefixes: a key without its prefix is refused
	mark := b.Proxy().Count()
	checks := map[string]error{
		"unregistered type":             heterogeneous.Insert(b.ctx, b.t, &unregistered{PK: "a", RK: "b"}),
		"nil":                           heterogeneous.Insert[Employee](b.ctx, b.t, nil),
		"key without prefix":            heterogeneous.Insert(b.ctx, b.t, &Employee{Department: "Sales", RowKey: "000001"}),
		"add without prefix":            b.depts.Add(b.ctx, &Employee{Department: "Sales", RowKey: "000001"}),
		"add with no partition":         b.depts.Add(b.ctx, &Employee{RowKey: "Employee_1"}),
		"transaction with a bad action": b.t.Submit(b.ctx, heterogeneous.InsertAction(b.t, &Employee{Department: "Sales", RowKey: "x"})),
	}
	_, checks["get bad key"] = heterogeneous.Get[Employee](b.ctx, b.t, "Sales", "a#b")
	_, checks["get unregistered"] = heterogeneous.Get[unregistered](b.ctx, b.t, "a", "b")
	for _, err := range b.t.Query(b.ctx, repo.Query{Token: "abc"}) {
		checks["query with a malformed token"] = err
	}
	for _, err := range heterogeneous.QueryOf[unregistered](b.ctx, b.t, repo.Query{}) {
		checks["query of an unregistered type"] = err
	}
	for name, err := range checks {
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	if n := b.Proxy().Count() - mark; n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	if _, err := heterogeneous.NewOneToMany[Department, unregistered](b.t, func(string) string { return "x" }, func(d *Department) *int32 { return &d.EmployeeCount }); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("relationship with an unregistered child: %v", err)
	}
}
