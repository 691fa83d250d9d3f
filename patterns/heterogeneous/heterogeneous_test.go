package heterogeneous_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/heterogeneous"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
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

// The guide's EmployeeCount stays equal to the number of employees through adds and
// removes, including refused ones.
func TestEmployeeCountFollowsAddsAndRemoves(t *testing.T) {
	t.Parallel()
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, l)
			b.dept(t, "Sales")
			for i := 1; i <= 4; i++ {
				if err := b.depts.Add(b.ctx, b.emp("Sales", i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.depts.Remove(b.ctx, "Sales", b.l.empKey("000002")); err != nil {
				t.Fatal(err)
			}
			b.checkCount(t, "Sales", 3)
			if err := b.depts.Add(b.ctx, b.emp("Sales", 1)); !errors.Is(err, repo.ErrAlreadyExists) {
				t.Fatalf("add of an existing employee: %v", err)
			}
			if err := b.depts.Remove(b.ctx, "Sales", b.l.empKey("000002")); !errors.Is(err, repo.ErrNotFound) {
				t.Fatalf("remove of a removed employee: %v", err)
			}
			if err := b.depts.Add(b.ctx, b.emp("Marketing", 9)); !errors.Is(err, repo.ErrNotFound) {
				t.Fatalf("add to a department that does not exist: %v", err)
			}
			if err := b.depts.Remove(b.ctx, "Sales", b.l.deptKey); !errors.Is(err, repo.ErrInvalidInput) {
				t.Fatalf("remove of the department itself: %v", err)
			}
			b.checkCount(t, "Sales", 3)
		})
	}
}

// At least 20 goroutines adding employees (and some removing them) at once: every
// increment and decrement lands, the count equals the employees stored.
func TestConcurrentAddsLoseNoIncrement(t *testing.T) {
	t.Parallel()
	b := setup(t, layouts[0])
	b.dept(t, "Sales")
	const writers, each = 20, 3
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				id := w*100 + i
				if err := b.depts.Add(b.ctx, b.emp("Sales", id)); err != nil {
					errs <- err
					return
				}
				if i == 0 && w%4 == 0 {
					if err := b.depts.Remove(b.ctx, "Sales", b.l.empKey(fmt.Sprintf("%06d", id))); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	b.checkCount(t, "Sales", writers*each-writers/4)
}

// Faults on the transaction: a lost response is recognised as applied (counted once), a
// busy server is retried, a refused transaction changes nothing and can be run again.
func TestAddUnderFaults(t *testing.T) {
	t.Parallel()
	b := setup(t, layouts[0])
	b.dept(t, "Sales")
	p := b.Proxy()
	p.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	// Without write tracking, repo may answer a retried transaction whose first attempt
	// landed with ErrOutcomeUnknown (never "nothing written"); the child is written once
	// either way.
	if err := b.depts.Add(b.ctx, b.emp("Sales", 1)); err != nil && !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("add through a lost response: %v", err)
	}
	b.checkCount(t, "Sales", 1)
	p.AddRule(faultproxy.Rule{Name: "busy", Match: faultproxy.IsBatch, Times: 2, Action: faultproxy.Respond(503, "ServerBusy")})
	if err := b.depts.Add(b.ctx, b.emp("Sales", 2)); err != nil {
		t.Fatalf("add through a busy server: %v", err)
	}
	p.AddRule(faultproxy.Rule{Name: "refused", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.Respond(403, "AuthorizationFailure")})
	if err := b.depts.Add(b.ctx, b.emp("Sales", 3)); err == nil {
		t.Fatal("add through a refused transaction succeeded")
	}
	b.checkCount(t, "Sales", 2) // the refused add changed nothing
	if err := b.depts.Add(b.ctx, b.emp("Sales", 3)); err != nil {
		t.Fatalf("rerun of the refused add: %v", err)
	}
	b.checkCount(t, "Sales", 3)
	if p.Fired("lost") != 1 || p.Fired("busy") != 2 || p.Fired("refused") != 1 {
		t.Fatalf("faults fired: %d %d %d", p.Fired("lost"), p.Fired("busy"), p.Fired("refused"))
	}
}

// Employees written around the relationship make the count wrong; Recount repairs it.
func TestRecount(t *testing.T) {
	t.Parallel()
	b := setup(t, layouts[1])
	b.dept(t, "Sales")
	for i := 1; i <= 5; i++ {
		if err := heterogeneous.Insert(b.ctx, b.t, b.emp("Sales", i)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := b.depts.Recount(b.ctx, "Sales")
	if err != nil || n != 5 {
		t.Fatalf("recount: %d %v", n, err)
	}
	b.checkCount(t, "Sales", 5)
	if _, err := b.depts.Recount(b.ctx, "Nowhere"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("recount without a department: %v", err)
	}
}

type unregistered struct {
	PK string `table:",pk"`
	RK string `table:",rk"`
}

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

// A transaction whose outcome repo cannot prove (ErrOutcomeUnknown: a lost response, then
// a retry that met a conflict) is re-decided from a fresh read, since the transaction is
// atomic: what did not land (the parent still at the version read) starts over; what did
// is reported as unknown (never ErrAlreadyExists or ErrNotFound, "nothing written", and
// never success: a gone child may be another writer's Remove). The count stays exact in
// every case.
func TestOneToManyOutcomeUnknownIsRedecided(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		op     string
		landed bool
	}{{"add", true}, {"add", false}, {"remove", true}, {"remove", false}} {
		t.Run(fmt.Sprintf("%s landed=%v", c.op, c.landed), func(t *testing.T) {
			t.Parallel()
			b := setup(t, layouts[0])
			b.dept(t, "Sales")
			e := b.emp("Sales", 1)
			if c.op == "remove" {
				if err := b.depts.Add(b.ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			if !c.landed {
				b.Proxy().AddRule(faultproxy.Rule{Name: "refused", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.Respond(412, "UpdateConditionNotSatisfied")})
			}
			first := true
			heterogeneous.SetAfterSubmit(b.depts, func(err error) error {
				if !first {
					return err
				}
				first = false
				if c.landed != (err == nil) {
					t.Errorf("the first transaction landed %v, want %v: %v", err == nil, c.landed, err)
				}
				return fmt.Errorf("test: retried transaction: %w (%w)", repo.ErrOutcomeUnknown,
					&repo.Error{Op: "transaction", StatusCode: 412, Code: "UpdateConditionNotSatisfied", Kind: repo.ErrPreconditionFailed})
			})
			var err error
			want := 1
			if c.op == "add" {
				err = b.depts.Add(b.ctx, e)
			} else {
				err = b.depts.Remove(b.ctx, "Sales", e.RowKey)
				want = 0
			}
			if c.landed {
				if !errors.Is(err, repo.ErrOutcomeUnknown) {
					t.Fatalf("%s whose transaction landed: %v, want ErrOutcomeUnknown", c.op, err)
				}
			} else if err != nil {
				t.Fatalf("%s: %v, want nil", c.op, err)
			}
			b.checkCount(t, "Sales", want)
		})
	}
}

// competitor is a OneToMany over b's table on clients that bypass the proxies: the
// competing writer of a window test, never held by a pause.
func (b *bed) competitor(t *testing.T) *heterogeneous.OneToMany[Department, Employee, int32] {
	t.Helper()
	direct, err := repo.New[codec.Entity](b.Direct.Tables, b.Table, b.RepoOptions())
	if err != nil {
		t.Fatal(err)
	}
	_, r := departments(t, direct, b.l)
	return r
}

// Attacks "a writer that loses the race on the parent's ETag re-reads it and retries ...
// so concurrent adds lose no increment" at its window: an Add that read the parent is
// held before its transaction while another Add (and a Remove) commits; released, its
// transaction fails on the parent's ETag, nothing of it is written, and it starts over.
func TestOneToManyWindowConcurrentAdd(t *testing.T) {
	t.Parallel()
	b := setup(t, layouts[0])
	b.dept(t, "Sales")
	other := b.competitor(t)
	if err := other.Add(b.ctx, b.emp("Sales", 1)); err != nil {
		t.Fatal(err)
	}
	ps := b.Proxy().PauseAt("held add", faultproxy.IsBatch, 1)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	go func() { done <- b.depts.Add(b.ctx, b.emp("Sales", 2)) }()
	if err := ps.Wait(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Add(b.ctx, b.emp("Sales", 3)); err != nil {
		t.Fatal(err)
	}
	if err := other.Remove(b.ctx, "Sales", b.emp("Sales", 1).RowKey); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	if err := <-done; err != nil {
		t.Fatalf("held add: %v", err)
	}
	b.checkCount(t, "Sales", 2)
	if n := b.Proxy().CountMatching(func(r faultproxy.RequestInfo) bool { return r.Method == "POST" && strings.HasSuffix(r.Path, "$batch") }); n != 2 {
		t.Fatalf("%d transactions through the proxy, want 2 (the held one failed, the retry landed)", n)
	}
}

// Attacks Recount's "a child added or removed meanwhile changes the parent, and the count
// starts over" at its window: Recount's update of the parent is held while a child is
// added; released, it fails on the parent's ETag and counts again.
func TestRecountWindowConcurrentAdd(t *testing.T) {
	t.Parallel()
	b := setup(t, layouts[0])
	b.dept(t, "Sales")
	other := b.competitor(t)
	for i := 1; i <= 3; i++ { // around the relationship: the count stays 0
		if err := heterogeneous.Insert(b.ctx, b.t, b.emp("Sales", i)); err != nil {
			t.Fatal(err)
		}
	}
	ps := b.Proxy().PauseAt("held recount update", faultproxy.All(faultproxy.IsEntityWrite, faultproxy.Not(faultproxy.IsInsertEntity)), 1)
	t.Cleanup(ps.Release)
	type result struct {
		n   int32
		err error
	}
	done := make(chan result, 1)
	go func() { n, err := b.depts.Recount(b.ctx, "Sales"); done <- result{n, err} }()
	if err := ps.Wait(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Add(b.ctx, b.emp("Sales", 4)); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	if r := <-done; r.err != nil || r.n != 4 {
		t.Fatalf("recount: %d, %v; want 4", r.n, r.err)
	}
	b.checkCount(t, "Sales", 4)
}
