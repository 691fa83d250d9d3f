package denormalize

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Employee is the source: the guide's employee entity, here the department's manager.
type Employee struct {
	Department string `table:",pk"`
	EmployeeID string `table:",rk"`
	FirstName  string `table:"FirstName"`
	LastName   string `table:"LastName"`
	Phone      string `table:"Phone"`
	Email      string `table:"Email"`
	ETag       string `table:",etag"`
}

// Department is the target: the guide's department entity with a copy of its manager's
// details.
type Department struct {
	Partition     string `table:",pk"`
	ID            string `table:",rk"`
	Name          string `table:"Name"`
	EmployeeCount int32  `table:"EmployeeCount"`
	ManagerPK     string `table:"ManagerPartition,omitempty"`
	ManagerID     string `table:"ManagerID,omitempty"`
	ManagerName   string `table:"ManagerName,omitempty"`
	ManagerPhone  string `table:"ManagerPhone,omitempty"`
	ManagerEmail  string `table:"ManagerEmail,omitempty"`
	ETag          string `table:",etag"`
}

func managerOf(d *Department) (Key, bool) {
	return Key{d.ManagerPK, d.ManagerID}, d.ManagerID != ""
}

func copyManager(d *Department, s *Employee) {
	d.ManagerName = s.FirstName + " " + s.LastName
	d.ManagerPhone = s.Phone
	d.ManagerEmail = s.Email
}

func manager(dept, id, first, last, phone string) *Employee {
	return &Employee{Department: dept, EmployeeID: id, FirstName: first, LastName: last, Phone: phone, Email: id + "@contoso.com"}
}

func dept(pk, id, name string, mgr *Employee) *Department {
	d := &Department{Partition: pk, ID: id, Name: name, EmployeeCount: 10}
	if mgr != nil {
		d.ManagerPK, d.ManagerID = mgr.Department, mgr.EmployeeID
	}
	return d
}

var fast = testbed.FastRetry()

// bed is one test's storage, with the tables of employees (sources) and departments
// (targets).
type bed struct {
	*testbed.Bed
	t     *testing.T
	emps  *repo.Table[Employee]
	depts *repo.Table[Department]
	log   *zap.Logger
}

// setup makes a bed with a table for employees and, when separate, another for departments.
func setup(t *testing.T, proxied, separate bool) *bed {
	t.Helper()
	b := &bed{Bed: testbed.New(t, &testbed.Options{Proxied: proxied}), t: t, log: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))}
	deptTable := b.Table
	if separate {
		deptTable = b.NewTableName()
	}
	b.emps = must(repo.New[Employee](b.Clients.Tables, b.Table, &repo.Options{Retry: fast, Logger: b.log}))
	b.depts = must(repo.New[Department](b.Clients.Tables, deptTable, &repo.Options{Retry: fast, Logger: b.log}))
	return b
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func (b *bed) relation(opts *Options) *Relation[Employee, Department] {
	b.t.Helper()
	r, err := New(b.emps, b.depts, "Manager", managerOf, copyManager, opts)
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

// across returns the AcrossPartitions relation on q, with a Settle of 6 s unless opts sets
// one: a write must land within Settle/2, and under -race on a 2-core machine running two
// test suites at once a proxied write plus its enqueue has taken more than 1 s.
func (b *bed) across(q *queueworker.Client, opts *Options) *Relation[Employee, Department] {
	b.t.Helper()
	o := Options{Settle: 6 * time.Second}
	if opts != nil && opts.Settle != 0 {
		o = *opts
	}
	r, err := NewAcross(b.emps, b.depts, "Manager", managerOf, copyManager, q, &o)
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

func (b *bed) insert(es ...*Employee) {
	b.t.Helper()
	for _, e := range es {
		if err := b.emps.Insert(b.Ctx, e); err != nil {
			b.t.Fatal(err)
		}
	}
}

// checkCopy asserts that the department holds the manager's current details.
func (b *bed) checkCopy(r *Relation[Employee, Department], k Key) Department {
	b.t.Helper()
	d, err := r.Targets().Get(b.Ctx, k.PartitionKey, k.RowKey)
	if err != nil {
		b.t.Fatal(err)
	}
	src, ok := managerOf(&d)
	if !ok {
		if d.ManagerName != "" {
			b.t.Fatalf("%v has no manager but a copy %q", k, d.ManagerName)
		}
		return d
	}
	s, err := b.emps.Get(b.Ctx, src.PartitionKey, src.RowKey)
	if err != nil {
		b.t.Fatal(err)
	}
	want := d
	copyManager(&want, &s)
	if d != want {
		b.t.Fatalf("%v copies %q %q %q, the manager has %q %q %q", k, d.ManagerName, d.ManagerPhone, d.ManagerEmail, want.ManagerName, want.ManagerPhone, want.ManagerEmail)
	}
	return d
}

func (b *bed) checkCopies(r *Relation[Employee, Department], src Key, want ...Key) {
	b.t.Helper()
	got, err := r.Copies(b.Ctx, src)
	if err != nil {
		b.t.Fatal(err)
	}
	slices.SortFunc(want, compareKeys)
	if len(got) != len(want) || (len(got) > 0 && !slices.Equal(got, want)) {
		b.t.Fatalf("Copies(%v) = %v, want %v", src, got, want)
	}
}

// header returns the copy count of src's link header (-1 when there is none).
func (b *bed) header(r *Relation[Employee, Department], src Key) int {
	b.t.Helper()
	hdr, _, err := r.readLinks(b.Ctx, src)
	if err != nil {
		b.t.Fatal(err)
	}
	if hdr == nil {
		return -1
	}
	return int(hdr.Copies)
}

func (b *bed) queue() *queueworker.Client {
	b.t.Helper()
	c, _ := b.Queue()
	return c
}

func (b *bed) drain(q *queueworker.Client, r *Relation[Employee, Department]) queueworker.Stats {
	b.t.Helper()
	w := b.Worker(q, r.Register)
	testbed.Drain(b.t, w)
	return w.Stats()
}

// message is one dequeued message, decoded as the worker would.
type message = testbed.Envelope

func (b *bed) takeMessages(q *queueworker.Client) []message { return b.TakeMessages(q) }

// handle runs the relation's handler for m, as the worker would.
func (b *bed) handle(r *Relation[Employee, Department], m message) error {
	b.t.Helper()
	switch m.Kind {
	case r.SourceKind():
		var c SourceChange
		if err := json.Unmarshal(m.Payload, &c); err != nil {
			b.t.Fatal(err)
		}
		return r.HandleSource(b.Ctx, &queueworker.Message[SourceChange]{Kind: m.Kind, Payload: c, EnqueuedAt: m.EnqueuedAt})
	case r.TargetKind():
		var c TargetChange
		if err := json.Unmarshal(m.Payload, &c); err != nil {
			b.t.Fatal(err)
		}
		return r.HandleTarget(b.Ctx, &queueworker.Message[TargetChange]{Kind: m.Kind, Payload: c, EnqueuedAt: m.EnqueuedAt})
	}
	b.t.Fatalf("unknown kind %q", m.Kind)
	return nil
}

// directTables returns the bed's tables on clients that bypass the proxies.
func (b *bed) directTables() (*repo.Table[Employee], *repo.Table[Department]) {
	b.t.Helper()
	emps := must(repo.New[Employee](b.Direct.Tables, b.emps.Name(), &repo.Options{Retry: fast, Logger: b.log}))
	depts := must(repo.New[Department](b.Direct.Tables, b.depts.Name(), &repo.Options{Retry: fast, Logger: b.log}))
	return emps, depts
}

// direct returns a relation like b.relation on clients that bypass the proxies (the
// competing writer of a window test, never held).
func (b *bed) direct(opts *Options) *Relation[Employee, Department] {
	b.t.Helper()
	emps, depts := b.directTables()
	r, err := New(emps, depts, "Manager", managerOf, copyManager, opts)
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

// directAcross is direct in AcrossPartitions mode, on q.
func (b *bed) directAcross(q *queueworker.Client, opts *Options) *Relation[Employee, Department] {
	b.t.Helper()
	emps, depts := b.directTables()
	r, err := NewAcross(emps, depts, "Manager", managerOf, copyManager, q, opts)
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

func isSourceWrite(src Key) func(*http.Request) bool {
	return faultproxy.All(faultproxy.IsEntityWrite, faultproxy.PathContains(fmt.Sprintf("PartitionKey='%s',RowKey='%s'", src.PartitionKey, src.RowKey)))
}
