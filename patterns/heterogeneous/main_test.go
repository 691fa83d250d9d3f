package heterogeneous_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/heterogeneous"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Department is the guide's department entity: the partition is the department.
type Department struct {
	Name          string    `table:",pk"`
	RowKey        string    `table:",rk"`
	Manager       string    `table:"Manager"`
	EmployeeCount int32     `table:"EmployeeCount"`
	ETag          string    `table:",etag"`
	Timestamp     time.Time `table:",timestamp"`
}

// Employee is the guide's employee entity, in its department's partition.
type Employee struct {
	Department string `table:",pk"`
	RowKey     string `table:",rk"`
	FirstName  string `table:"FirstName"`
	LastName   string `table:"LastName"`
	Age        int32  `table:"Age"`
	Email      string `table:"Email"`
	ETag       string `table:",etag"`
}

// layout says where the type is kept and how keys look under it.
type layout struct {
	name    string
	opts    codec.RegistryOptions
	deptKey string
	empKey  func(id string) string
}

var layouts = []layout{
	{name: "property", deptKey: "DEPARTMENT", empKey: func(id string) string { return id }},
	{name: "rowkey prefix", opts: codec.RegistryOptions{Discriminator: codec.ByRowKeyPrefix},
		deptKey: "Department_", empKey: func(id string) string { return "Employee_" + id }},
}

type bed struct {
	*testbed.Bed
	ctx   context.Context
	l     layout
	t     *heterogeneous.Table
	depts *heterogeneous.OneToMany[Department, Employee, int32]
	raw   *repo.Table[codec.Entity]
}

func setup(t *testing.T, l layout) *bed {
	t.Helper()
	tb := testbed.New(t, &testbed.Options{Proxied: true})
	tbl, depts := departments(t, testbed.NewTable[codec.Entity](tb, nil), l)
	return &bed{Bed: tb, ctx: tb.Ctx, l: l, t: tbl, depts: depts, raw: tb.Raw}
}

// departments returns the heterogeneous table over table with Department and Employee
// registered, and their one-to-many relation.
func departments(t *testing.T, table *repo.Table[codec.Entity], l layout) (*heterogeneous.Table, *heterogeneous.OneToMany[Department, Employee, int32]) {
	t.Helper()
	tbl, err := heterogeneous.New(table, &heterogeneous.Options{Registry: l.opts})
	if err != nil {
		t.Fatal(err)
	}
	if err := heterogeneous.Register[Department](tbl, "Department"); err != nil {
		t.Fatal(err)
	}
	if err := heterogeneous.Register[Employee](tbl, "Employee"); err != nil {
		t.Fatal(err)
	}
	depts, err := heterogeneous.NewOneToMany[Department, Employee](tbl, func(string) string { return l.deptKey }, func(d *Department) *int32 { return &d.EmployeeCount })
	if err != nil {
		t.Fatal(err)
	}
	return tbl, depts
}

func (b *bed) dept(t *testing.T, name string) *Department {
	t.Helper()
	d := &Department{Name: name, RowKey: b.l.deptKey, Manager: "Jones"}
	if err := heterogeneous.Insert(b.ctx, b.t, d); err != nil {
		t.Fatal(err)
	}
	return d
}

func (b *bed) emp(dept string, id int) *Employee {
	return &Employee{Department: dept, RowKey: b.l.empKey(fmt.Sprintf("%06d", id)), FirstName: "F", LastName: fmt.Sprintf("L%d", id), Age: int32(20 + id%40), Email: fmt.Sprintf("e%d@contoso.com", id)}
}

// checkCount asserts that the department's count equals its stored employees.
func (b *bed) checkCount(t *testing.T, dept string, want int) {
	t.Helper()
	d, staff, err := b.depts.Load(b.ctx, dept)
	if err != nil {
		t.Fatal(err)
	}
	if int(d.EmployeeCount) != want || len(staff) != want {
		t.Fatalf("%s: EmployeeCount %d, %d employees stored, want %d", dept, d.EmployeeCount, len(staff), want)
	}
}

type unregistered struct {
	PK string `table:",pk"`
	RK string `table:",rk"`
}
