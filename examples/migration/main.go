// Command migration runs a zero-downtime re-key (package patterns/migrate) on the guide's
// employee data, on an embedded, in-memory Azurite: the employees live in one partition
// per department, so a large department is a hot partition; the migration moves them to
// "NN|Department" partitions (NN a hash of the employee id, 8 buckets) while a writer
// keeps updating them through the migration. Each stage is printed as it is reached; at
// the end the old layout is empty and every acknowledged update is
// in the new one.
//
//	go run ./examples/migration
package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/tablepatterns/tablepatterns/patterns/migrate"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

func main() { tabletest.Main("migration", run) }

// Employee is the guide's employee entity in its old layout: PartitionKey the department.
type Employee struct {
	Department string `table:",pk"`
	RowKey     string `table:",rk"` // empid_000123
	FirstName  string
	LastName   string
	Age        int32
	Email      string
	ETag       string `table:",etag"`
}

// EmployeeV2 is the new layout: PartitionKey "NN|Department".
type EmployeeV2 struct {
	Partition  string `table:",pk"`
	RowKey     string `table:",rk"`
	Department string
	FirstName  string
	LastName   string
	Age        int32
	Email      string
	ETag       string `table:",etag"`
}

const buckets = 8

func newKeys(pk, rk string) (string, string, error) {
	h := fnv.New32a()
	h.Write([]byte(rk))
	return fmt.Sprintf("%02d|%s", h.Sum32()%buckets, pk), rk, nil
}

func upgrade(e Employee) (EmployeeV2, error) {
	return EmployeeV2{Department: e.Department, FirstName: e.FirstName, LastName: e.LastName, Age: e.Age, Email: e.Email}, nil
}

func run(ctx context.Context, out io.Writer, connStr string) error {
	clients, err := account.NewClients(connStr, nil)
	if err != nil {
		return err
	}
	suffix := time.Now().UnixNano() % 1e12
	old, err := repo.New[Employee](clients.Tables, fmt.Sprintf("Employees%d", suffix), nil)
	if err != nil {
		return err
	}
	next, err := repo.New[EmployeeV2](clients.Tables, fmt.Sprintf("EmployeesByBucket%d", suffix), nil)
	if err != nil {
		return err
	}
	for _, t := range []interface{ CreateIfNotExists(context.Context) error }{old, next} {
		if err := t.CreateIfNotExists(ctx); err != nil {
			return err
		}
	}
	defer func() {
		_ = old.DeleteTable(context.WithoutCancel(ctx))
		_ = next.DeleteTable(context.WithoutCancel(ctx))
	}()
	var staff []*Employee
	for i := range 300 {
		dept := "Sales" // the hot partition
		if i%10 == 0 {
			dept = "Marketing"
		}
		staff = append(staff, &Employee{Department: dept, RowKey: fmt.Sprintf("empid_%06d", i), FirstName: "Ann", LastName: fmt.Sprintf("Lee%d", i), Age: 30, Email: fmt.Sprintf("ann.lee%d@contoso.com", i)})
	}
	if err := old.BulkWrite(ctx, staff, nil); err != nil {
		return err
	}
	fmt.Fprintf(out, "stored %d employees in partitions Sales and Marketing\n", len(staff))

	// Short bounds for a single-process demo; in production keep the defaults (10 s, 10 s,
	// 2 s), the same in every process.
	m, err := migrate.New(migrate.Spec[Employee, EmployeeV2]{
		Name: "employees-by-bucket", Service: clients.Tables, Source: old, Target: next,
		Keys: newKeys, Transform: upgrade, Control: fmt.Sprintf("Migrations%d", suffix),
	}, &migrate.Options{Refresh: 100 * time.Millisecond, WriteTimeout: 2 * time.Second, ClockSkew: 50 * time.Millisecond})
	if err != nil {
		return err
	}
	if err := m.Plan(ctx); err != nil {
		return err
	}
	fmt.Fprintln(out, "planned: no two employees share a new key")

	// The application keeps working: it reads an employee and updates its age If-Match.
	ages := map[string]int32{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	updates := 0
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			e := staff[rand.IntN(len(staff))]
			v, err := m.Get(ctx, e.Department, e.RowKey)
			if err != nil {
				continue
			}
			upd := &Employee{Department: v.Department, RowKey: v.RowKey, FirstName: v.FirstName, LastName: v.LastName, Age: v.Age + 1, Email: v.Email, ETag: v.ETag}
			if err := m.Update(ctx, upd); err == nil {
				ages[e.RowKey] = upd.Age
				updates++
			}
		}
	})
	for {
		st, err := m.Advance(ctx)
		if err != nil {
			close(stop)
			wg.Wait()
			return err
		}
		fmt.Fprintf(out, "stage %s\n", st.Stage)
		if st.Stage == migrate.Done {
			break
		}
	}
	close(stop)
	wg.Wait()

	rest, err := old.Collect(ctx, repo.Query{})
	if err != nil {
		return err
	}
	moved, err := next.Collect(ctx, repo.Query{})
	if err != nil {
		return err
	}
	perPartition := map[string]int{}
	lost := 0
	for _, e := range moved {
		perPartition[e.Partition]++
		if want, ok := ages[e.RowKey]; ok && e.Age != want {
			lost++
		}
	}
	var parts []string
	for p, n := range perPartition {
		parts = append(parts, fmt.Sprintf("%s=%d", p, n))
	}
	sort.Strings(parts)
	fmt.Fprintf(out, "old layout: %d entities\n", len(rest))
	fmt.Fprintf(out, "new layout: %d employees over %d partitions: %v\n", len(moved), len(perPartition), parts)
	fmt.Fprintf(out, "writer: %d updates acknowledged during the migration, %d missing from the new layout\n", updates, lost)
	fmt.Fprintln(out, "migration finished")
	return nil
}
