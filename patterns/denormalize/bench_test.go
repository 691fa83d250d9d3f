package denormalize

import (
	"context"
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// benchBed is a partition of the guide's layout: 100 departments, each with its manager,
// in one table (InPartition), on one Azurite.
type benchBed struct {
	emps  *repo.Table[Employee]
	depts *repo.Table[Department]
	rel   *Relation[Employee, Department]
	ctr   *benchcmp.Counter
}

// newBenchBed seeds the departments on clients whose requests are counted: the one place
// this file builds clients and constructors.
func newBenchBed(b *testing.B) *benchBed {
	ctx := context.Background()
	ctr := benchcmp.NewCounter()
	clients := must(account.NewClients(testenv.ConnectionString(b), &account.ClientOptions{Transport: ctr}))
	table := testenv.TableName(b)
	testenv.Table(b, table)
	bb := &benchBed{
		emps:  must(repo.New[Employee](clients.Tables, table, nil)),
		depts: must(repo.New[Department](clients.Tables, table, nil)),
		ctr:   ctr,
	}
	bb.rel = must(New(bb.emps, bb.depts, "Manager", managerOf, copyManager, nil))
	for i := range 100 {
		pk := fmt.Sprintf("Dept%03d", i)
		m := manager(pk, "000001", "Jun", fmt.Sprintf("Manager%03d", i), "555-0100")
		if err := bb.emps.Insert(ctx, m); err != nil {
			b.Fatal(err)
		}
		if err := bb.rel.PutTarget(ctx, dept(pk, "DEPARTMENT", pk, m)); err != nil {
			b.Fatal(err)
		}
	}
	return bb
}

// BenchmarkDepartmentWithManager compares reading a department with its manager's name and
// phone: denormalized is one point query of the department entity, which holds the copy;
// normalized (ratio) is the guide's "two round trips": the department, then the manager's
// employee entity. The sides alternate operation by operation in one run (benchcmp).
//
//	go test -run '^$' -bench . -benchtime=200x ./patterns/denormalize/
func BenchmarkDepartmentWithManager(b *testing.B) {
	bb := newBenchBed(b)
	ctx := context.Background()
	benchcmp.Run(b, &benchcmp.Options{GC: true, Requests: bb.ctr.Count},
		benchcmp.Side{Name: "denormalized", Op: func(i int) error {
			d, err := bb.depts.Get(ctx, fmt.Sprintf("Dept%03d", i%100), "DEPARTMENT")
			if err != nil {
				return err
			}
			return benchcmp.Check("has the manager's phone", d.ManagerPhone != "", true)
		}},
		benchcmp.Side{Name: "normalized", Op: func(i int) error {
			d, err := bb.depts.Get(ctx, fmt.Sprintf("Dept%03d", i%100), "DEPARTMENT")
			if err != nil {
				return err
			}
			m, err := bb.emps.Get(ctx, d.ManagerPK, d.ManagerID)
			if err != nil {
				return err
			}
			return benchcmp.Check("has the manager's phone", m.Phone != "", true)
		}})
}

// BenchmarkUpdateManager compares the price of consistency when the manager's phone
// changes: relation is UpdateSource (read the manager, read its links, read the
// department, one transaction for the three rows); two-writes is the naive way, an
// update of the employee and another of the department, not atomic (a stop between them
// leaves the copy stale) and not protected against a concurrent reassignment. Here ratio
// is below 1: two-writes' time over the relation's, what consistency costs.
func BenchmarkUpdateManager(b *testing.B) {
	bb := newBenchBed(b)
	ctx := context.Background()
	benchcmp.Run(b, &benchcmp.Options{GC: true, Requests: bb.ctr.Count},
		benchcmp.Side{Name: "relation", Op: func(i int) error {
			m := manager(fmt.Sprintf("Dept%03d", i%100), "000001", "Jun", fmt.Sprintf("Manager%03d", i%100), fmt.Sprint(i))
			return bb.rel.UpdateSource(ctx, m)
		}},
		benchcmp.Side{Name: "two-writes", Op: func(i int) error {
			pk := fmt.Sprintf("Dept%03d", (i+50)%100)
			m := manager(pk, "000001", "Jun", fmt.Sprintf("Manager%03d", (i+50)%100), fmt.Sprint(i))
			if err := bb.emps.Update(ctx, m, &repo.UpdateOptions{Unconditional: true}); err != nil {
				return err
			}
			d := dept(pk, "DEPARTMENT", pk, m)
			copyManager(d, m)
			return bb.depts.Update(ctx, d, &repo.UpdateOptions{Unconditional: true})
		}})
}
