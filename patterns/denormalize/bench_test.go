package denormalize

import (
	"context"
	"fmt"
	"testing"

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
}

func newBenchBed(b *testing.B) *benchBed {
	ctx := context.Background()
	clients := must(account.NewClients(testenv.ConnectionString(b), nil))
	table := testenv.TableName(b)
	testenv.Table(b, table)
	bb := &benchBed{
		emps:  must(repo.New[Employee](clients.Tables, table, nil)),
		depts: must(repo.New[Department](clients.Tables, table, nil)),
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
// phone: impl=denormalized is one point query of the department entity, which holds the
// copy; impl=normalized is the guide's "two round trips": the department, then the
// manager's employee entity.
func BenchmarkDepartmentWithManager(b *testing.B) {
	bb := newBenchBed(b)
	ctx := context.Background()
	i := 0
	b.Run("impl=denormalized", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			i++
			d, err := bb.depts.Get(ctx, fmt.Sprintf("Dept%03d", i%100), "DEPARTMENT")
			if err != nil || d.ManagerPhone == "" {
				b.Fatal(d, err)
			}
		}
	})
	b.Run("impl=normalized", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			i++
			d, err := bb.depts.Get(ctx, fmt.Sprintf("Dept%03d", i%100), "DEPARTMENT")
			if err != nil {
				b.Fatal(err)
			}
			m, err := bb.emps.Get(ctx, d.ManagerPK, d.ManagerID)
			if err != nil || m.Phone == "" {
				b.Fatal(m, err)
			}
		}
	})
}

// BenchmarkUpdateManager compares the price of consistency when the manager's phone
// changes: impl=relation is UpdateSource (read the manager, read its links, read the
// department, one transaction for the three rows); impl=two-writes is the naive way,
// an update of the employee and another of the department, not atomic (a stop between
// them leaves the copy stale) and not protected against a concurrent reassignment.
func BenchmarkUpdateManager(b *testing.B) {
	bb := newBenchBed(b)
	ctx := context.Background()
	i := 0
	b.Run("impl=relation", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			i++
			m := manager(fmt.Sprintf("Dept%03d", i%100), "000001", "Jun", fmt.Sprintf("Manager%03d", i%100), fmt.Sprint(i))
			if err := bb.rel.UpdateSource(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=two-writes", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			i++
			pk := fmt.Sprintf("Dept%03d", i%100)
			m := manager(pk, "000001", "Jun", fmt.Sprintf("Manager%03d", i%100), fmt.Sprint(i))
			if err := bb.emps.Update(ctx, m, &repo.UpdateOptions{Unconditional: true}); err != nil {
				b.Fatal(err)
			}
			d := dept(pk, "DEPARTMENT", pk, m)
			copyManager(d, m)
			if err := bb.depts.Update(ctx, d, &repo.UpdateOptions{Unconditional: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
