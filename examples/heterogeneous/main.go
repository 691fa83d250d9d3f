// Command heterogeneous runs the table design guide's heterogeneous entity types and
// one-to-many relationship (the Azure Table storage design guide, "work with heterogeneous entity types" and
// "one-to-many relationships") on the guide's data, on an embedded, in-memory Azurite:
// departments and their employees share a partition, each entity records its type in the
// EntityType property, one query reads a department with its employees into their own Go
// types, and every employee added or removed updates the department's EmployeeCount in
// the same entity group transaction — also when many are added at once.
//
//	go run ./examples/heterogeneous
package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/patterns/heterogeneous"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

func main() { tabletest.Main("heterogeneous", run) }

// Department is the guide's department entity: the department's partition, RowKey
// "DEPARTMENT".
type Department struct {
	Name           string `table:",pk"`
	RowKey         string `table:",rk"`
	DepartmentName string `table:"DepartmentName"`
	Manager        string `table:"Manager"`
	EmployeeCount  int32  `table:"EmployeeCount"`
	ETag           string `table:",etag"`
}

// Employee is the guide's employee entity, in its department's partition.
type Employee struct {
	Department string `table:",pk"`
	EmployeeID string `table:",rk"`
	FirstName  string `table:"FirstName"`
	LastName   string `table:"LastName"`
	Age        int32  `table:"Age"`
	Email      string `table:"Email"`
	ETag       string `table:",etag"`
}

const departmentKey = "DEPARTMENT"

func run(ctx context.Context, out io.Writer, connStr string) error {
	clients, err := account.NewClients(connStr, nil)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("Company%d", time.Now().UnixNano()%1e12)
	table, err := repo.New[codec.Entity](clients.Tables, name, nil)
	if err != nil {
		return err
	}
	t, err := heterogeneous.New(table, nil) // EntityType property
	if err != nil {
		return err
	}
	if err := heterogeneous.Register[Department](t, "Department"); err != nil {
		return err
	}
	if err := heterogeneous.Register[Employee](t, "Employee"); err != nil {
		return err
	}
	if err := t.CreateIfNotExists(ctx); err != nil {
		return err
	}
	raw, err := repo.New[Employee](clients.Tables, name, nil)
	if err != nil {
		return err
	}
	defer raw.DeleteTable(context.WithoutCancel(ctx))
	depts, err := heterogeneous.NewOneToMany[Department, Employee](t,
		func(string) string { return departmentKey }, func(d *Department) *int32 { return &d.EmployeeCount })
	if err != nil {
		return err
	}

	for _, d := range []*Department{
		{Name: "Sales", RowKey: departmentKey, DepartmentName: "Sales", Manager: "Jones"},
		{Name: "Marketing", RowKey: departmentKey, DepartmentName: "Marketing", Manager: "Phillips"},
	} {
		if err := heterogeneous.Insert(ctx, t, d); err != nil {
			return err
		}
	}
	staff := []Employee{
		{Department: "Sales", EmployeeID: "000123", FirstName: "Don", LastName: "Hall", Age: 34, Email: "donh@contoso.com"},
		{Department: "Sales", EmployeeID: "000152", FirstName: "Jun", LastName: "Cao", Age: 47, Email: "junc@contoso.com"},
		{Department: "Sales", EmployeeID: "000155", FirstName: "Ken", LastName: "Kwok", Age: 23, Email: "kenk@contoso.com"},
		{Department: "Marketing", EmployeeID: "000223", FirstName: "Jeff", LastName: "Phillips", Age: 45, Email: "jeffp@contoso.com"},
	}
	for i := range staff {
		if err := depts.Add(ctx, &staff[i]); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "added %d employees to 2 departments, each with its department's count in one transaction\n", len(staff))

	fmt.Fprintln(out, "one query of partition Sales:")
	for v, err := range t.Query(ctx, repo.Query{Filter: filter.PartitionKey("Sales")}) {
		if err != nil {
			return err
		}
		switch v := v.(type) {
		case *Department:
			fmt.Fprintf(out, "  Department %s, manager %s, EmployeeCount %d\n", v.DepartmentName, v.Manager, v.EmployeeCount)
		case *Employee:
			fmt.Fprintf(out, "  Employee   %s %s %s, %d\n", v.EmployeeID, v.FirstName, v.LastName, v.Age)
		}
	}

	if err := depts.Delete(ctx, "Sales", "000152", nil); err != nil {
		return err
	}
	d, emps, err := depts.Load(ctx, "Sales")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "after removing 000152: Sales EmployeeCount %d, %d employees stored\n", d.EmployeeCount, len(emps))

	// 25 hires at once: the writers race on the department's ETag, the losers re-read it
	// and try again, and no increment is lost.
	var wg sync.WaitGroup
	errs := make(chan error, 25)
	for i := range 25 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, _ := keys.Pad(int64(500+i), 6)
			errs <- depts.Add(ctx, &Employee{Department: "Marketing", EmployeeID: id, FirstName: "New", LastName: "Hire", Age: 25, Email: "hire" + id + "@contoso.com"})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	d, emps, err = depts.Load(ctx, "Marketing")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "after 25 concurrent hires: Marketing EmployeeCount %d, %d employees stored\n", d.EmployeeCount, len(emps))
	fmt.Fprintln(out, "heterogeneous finished")
	return nil
}
