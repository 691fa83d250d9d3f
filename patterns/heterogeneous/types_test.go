package heterogeneous_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/patterns/heterogeneous"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// One query over a partition decodes the department and each employee into its own type.
func TestOneQueryDecodesEachType(t *testing.T) {
	t.Parallel()
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, l)
			b.dept(t, "Sales")
			for i := 1; i <= 3; i++ {
				if err := b.depts.Add(b.ctx, b.emp("Sales", i)); err != nil {
					t.Fatal(err)
				}
			}
			mark := b.Proxy().Count()
			var depts, emps int
			for v, err := range b.t.Query(b.ctx, repo.Query{Filter: filter.PartitionKey("Sales")}) {
				if err != nil {
					t.Fatal(err)
				}
				switch v := v.(type) {
				case *Department:
					depts++
					if v.Manager != "Jones" || v.EmployeeCount != 3 || v.ETag == "" || v.Timestamp.IsZero() {
						t.Errorf("department %+v", v)
					}
				case *Employee:
					emps++
					if v.FirstName != "F" || v.Email == "" || v.ETag == "" {
						t.Errorf("employee %+v", v)
					}
				default:
					t.Errorf("decoded into %T", v)
				}
			}
			if depts != 1 || emps != 3 || b.Proxy().Count()-mark != 1 {
				t.Fatalf("%d departments, %d employees, %d requests", depts, emps, b.Proxy().Count()-mark)
			}
			// The discriminator is stored as the guide shows it.
			rk := b.l.empKey("000001")
			raw, err := b.raw.Get(b.ctx, "Sales", rk)
			if err != nil {
				t.Fatal(err)
			}
			if l.opts.Discriminator == codec.ByProperty && raw.Properties["EntityType"] != "Employee" {
				t.Fatalf("stored properties %v", raw.Properties)
			}
			// QueryOf reads one type only, filtered at the service.
			n := 0
			for e, err := range heterogeneous.QueryOf[Employee](b.ctx, b.t, repo.Query{Filter: filter.PartitionKey("Sales"), Select: []string{"LastName"}}) {
				if err != nil {
					t.Fatal(err)
				}
				if e.LastName == "" || e.FirstName != "" {
					t.Fatalf("projected employee %+v", e)
				}
				n++
			}
			if n != 3 {
				t.Fatalf("QueryOf returned %d employees", n)
			}
			// Get checks the type.
			if _, err := heterogeneous.Get[Employee](b.ctx, b.t, "Sales", b.l.deptKey); !errors.Is(err, heterogeneous.ErrTypeMismatch) {
				t.Fatalf("Get of a department as an employee: %v", err)
			}
			e, err := heterogeneous.Get[Employee](b.ctx, b.t, "Sales", rk)
			if err != nil || e.LastName != "L1" || e.ETag == "" {
				t.Fatalf("get: %+v %v", e, err)
			}
			// A replace keeps the discriminator: the entity still reads as an Employee.
			e.Age = 50
			if err := heterogeneous.Update(b.ctx, b.t, &e, nil); err != nil {
				t.Fatal(err)
			}
			if e2, err := heterogeneous.Get[Employee](b.ctx, b.t, "Sales", rk); err != nil || e2.Age != 50 {
				t.Fatalf("after update: %+v %v", e2, err)
			}
		})
	}
}

// Entities of types nobody registered are reported, or passed through on request.
func TestUnknownTypes(t *testing.T) {
	t.Parallel()
	b := setup(t, layouts[0])
	b.dept(t, "Sales")
	if err := b.raw.Insert(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "X", Properties: map[string]any{"EntityType": "Contractor", "Name": "Ann"}}); err != nil {
		t.Fatal(err)
	}
	var unknown *codec.UnknownEntityTypeError
	for _, err := range b.t.Query(b.ctx, repo.Query{Filter: filter.PartitionKey("Sales")}) {
		if err != nil && !errors.As(err, &unknown) {
			t.Fatal(err)
		}
	}
	if unknown == nil || unknown.Name != "Contractor" {
		t.Fatalf("unknown type not reported: %v", unknown)
	}
	if _, err := heterogeneous.Get[Department](b.ctx, b.t, "Sales", "X"); !errors.Is(err, heterogeneous.ErrTypeMismatch) {
		t.Fatalf("get of an unknown type: %v", err)
	}

	pass, err := heterogeneous.New(b.Raw, &heterogeneous.Options{Registry: codec.RegistryOptions{UnknownAsEntity: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := heterogeneous.Register[Department](pass, "Department"); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for v, err := range pass.Query(b.ctx, repo.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, fmt.Sprintf("%T", v))
	}
	if fmt.Sprint(kinds) != "[*heterogeneous_test.Department *codec.Entity]" {
		t.Fatalf("kinds %v", kinds)
	}
}

// Forged discriminators read back from storage: another registered type, none, an
// unregistered one, a non-string one. Each must be a *TypeMismatchError (documented).
func TestForgedDiscriminatorIsATypeMismatch(t *testing.T) {
	t.Parallel()
	b := testbed.New(t, nil)
	tbl := trackedHetero(t, b, codec.RegistryOptions{})
	cases := map[string]any{"other": "Note", "unregistered": "Admin", "empty": "", "number": int32(7), "missing": nil}
	for rk, typ := range cases {
		e := &codec.Entity{PartitionKey: "p", RowKey: rk, Properties: map[string]any{"FirstName": "Eve", "Text": "x"}}
		if typ != nil {
			e.Properties["EntityType"] = typ
		}
		if err := b.Raw.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
		v, err := heterogeneous.Get[Employee](b.Ctx, tbl, "p", rk)
		var tm *heterogeneous.TypeMismatchError
		if !errors.As(err, &tm) || !errors.Is(err, heterogeneous.ErrTypeMismatch) {
			t.Errorf("%s (EntityType=%v): Get[Employee] = %+v, %v; want a *TypeMismatchError", rk, typ, v, err)
		}
	}
}
