// Command denormalize runs the guide's denormalization pattern (the Azure Table storage design guide) on its own data:
// the department entity keeps a copy of its manager's details, so that one point query
// returns the department with its manager, and the copies stay consistent when the
// manager's details change.
//
//	go run ./examples/denormalize
//
// First the guide's layout (department and manager in the Sales partition: one
// transaction updates both), then departments kept in a table of their own (a queue worker
// refreshes the copies). The program starts an embedded, in-memory Azurite; with -use-env
// it runs against the account of AZURE_STORAGE_CONNECTION_STRING instead (it creates
// uniquely named tables and a queue, and deletes them at the end).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/tablepatterns/tablepatterns/patterns/denormalize"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

func main() { tabletest.Main("denormalize", run) }

// Employee is the guide's employee entity, the source of the copied details.
type Employee struct {
	Department string `table:",pk"`
	EmployeeID string `table:",rk"`
	FirstName  string `table:"FirstName"`
	LastName   string `table:"LastName"`
	Phone      string `table:"Phone"`
	Email      string `table:"Email"`
	ETag       string `table:",etag"`
}

// Department is the guide's denormalized department entity: its own data and a copy of
// its manager's details.
type Department struct {
	Partition     string `table:",pk"`
	ID            string `table:",rk"`
	Name          string `table:"Name"`
	EmployeeCount int32  `table:"EmployeeCount"`
	ManagerDept   string `table:"ManagerDepartment,omitempty"`
	ManagerID     string `table:"ManagerID,omitempty"`
	ManagerName   string `table:"ManagerName,omitempty"`
	ManagerPhone  string `table:"ManagerPhone,omitempty"`
	ManagerEmail  string `table:"ManagerEmail,omitempty"`
	ETag          string `table:",etag"`
}

func managerOf(d *Department) (denormalize.Key, bool) {
	return denormalize.Key{PartitionKey: d.ManagerDept, RowKey: d.ManagerID}, d.ManagerID != ""
}

func copyManager(d *Department, m *Employee) {
	d.ManagerName = m.FirstName + " " + m.LastName
	d.ManagerPhone = m.Phone
	d.ManagerEmail = m.Email
}

func uniqueSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func run(ctx context.Context, out io.Writer, connStr string) error {
	clients, err := account.NewClients(connStr, nil)
	if err != nil {
		return err
	}
	suffix := uniqueSuffix()
	if err := inPartition(ctx, out, clients, "DnCompany"+suffix); err != nil {
		return err
	}
	if err := acrossPartitions(ctx, out, clients, "DnEmployees"+suffix, "DnDepartments"+suffix, "dn-departments-"+suffix); err != nil {
		return err
	}
	fmt.Fprintln(out, "denormalization example finished")
	return nil
}

func createTables(ctx context.Context, tables ...interface{ CreateIfNotExists(context.Context) error }) error {
	for _, t := range tables {
		if err := t.CreateIfNotExists(ctx); err != nil {
			return err
		}
	}
	return nil
}

// inPartition is the guide's layout: the Sales department entity next to its manager's
// employee entity, in the Sales partition.
func inPartition(ctx context.Context, out io.Writer, clients *account.Clients, table string) error {
	fmt.Fprintln(out, "== in one partition: one transaction keeps the manager and the copies consistent")
	emps, err := repo.New[Employee](clients.Tables, table, nil)
	if err != nil {
		return err
	}
	depts, err := repo.New[Department](clients.Tables, table, nil)
	if err != nil {
		return err
	}
	if err := createTables(ctx, emps); err != nil {
		return err
	}
	defer emps.DeleteTable(context.WithoutCancel(ctx))
	rel, err := denormalize.New(emps, depts, "Manager", managerOf, copyManager, nil)
	if err != nil {
		return err
	}
	jun := &Employee{Department: "Sales", EmployeeID: "000152", FirstName: "Jun", LastName: "Cao", Phone: "425-555-0101", Email: "junc@contoso.com"}
	if err := emps.Insert(ctx, jun); err != nil {
		return err
	}
	sales := &Department{Partition: "Sales", ID: "DEPARTMENT", Name: "Sales", EmployeeCount: 42, ManagerDept: "Sales", ManagerID: "000152"}
	if err := rel.PutTarget(ctx, sales); err != nil {
		return err
	}
	if err := printDepartment(ctx, out, depts, "Sales", "DEPARTMENT"); err != nil {
		return err
	}
	jun.Phone = "425-555-0199"
	if err := rel.UpdateSource(ctx, jun); err != nil {
		return err
	}
	fmt.Fprintln(out, "changed Jun Cao's phone: the employee and the department copy in one transaction")
	if err := printDepartment(ctx, out, depts, "Sales", "DEPARTMENT"); err != nil {
		return err
	}
	return printCopies(ctx, out, rel, "Sales", "000152")
}

// acrossPartitions keeps the departments in a table of their own; a queue worker refreshes
// the copies.
func acrossPartitions(ctx context.Context, out io.Writer, clients *account.Clients, empTable, deptTable, queue string) error {
	fmt.Fprintln(out, "== across partitions: a queue worker keeps the copies consistent")
	emps, err := repo.New[Employee](clients.Tables, empTable, nil)
	if err != nil {
		return err
	}
	depts, err := repo.New[Department](clients.Tables, deptTable, nil)
	if err != nil {
		return err
	}
	if err := createTables(ctx, emps, depts); err != nil {
		return err
	}
	defer emps.DeleteTable(context.WithoutCancel(ctx))
	defer depts.DeleteTable(context.WithoutCancel(ctx))
	q := clients.Queues.NewQueueClient(queue)
	if err := queueworker.CreateQueueIfNotExists(ctx, clients.Queues, queue, nil); err != nil {
		return err
	}
	defer q.Delete(context.WithoutCancel(ctx), nil)
	defer clients.Queues.NewQueueClient(queue+queueworker.PoisonSuffix).Delete(context.WithoutCancel(ctx), nil)
	qc, err := queueworker.NewClient(q, nil)
	if err != nil {
		return err
	}
	rel, err := denormalize.NewAcross(emps, depts, "Manager", managerOf, copyManager, qc, nil)
	if err != nil {
		return err
	}
	reg := queueworker.NewRegistry()
	if err := rel.Register(reg); err != nil {
		return err
	}
	drain := func() error {
		w, err := queueworker.New(queueworker.Config{Queue: q, Service: clients.Queues, Registry: reg, MinPollInterval: 20 * time.Millisecond, MaxPollInterval: 200 * time.Millisecond})
		if err != nil {
			return err
		}
		return w.Drain(ctx)
	}
	jeff := &Employee{Department: "Marketing", EmployeeID: "000223", FirstName: "Jeff", LastName: "Phillips", Phone: "425-555-0123", Email: "jeffp@contoso.com"}
	if err := emps.Insert(ctx, jeff); err != nil {
		return err
	}
	for _, d := range []*Department{
		{Partition: "Departments", ID: "Marketing", Name: "Marketing", EmployeeCount: 17, ManagerDept: "Marketing", ManagerID: "000223"},
		{Partition: "Departments", ID: "Events", Name: "Events", EmployeeCount: 5, ManagerDept: "Marketing", ManagerID: "000223"},
	} {
		if err := rel.PutTarget(ctx, d); err != nil {
			return err
		}
	}
	if err := drain(); err != nil {
		return err
	}
	if err := printCopies(ctx, out, rel, "Marketing", "000223"); err != nil {
		return err
	}
	jeff.Phone = "425-555-0177"
	if err := rel.UpdateSource(ctx, jeff); err != nil { // a message first, then the write
		return err
	}
	if err := drain(); err != nil {
		return err
	}
	fmt.Fprintln(out, "changed Jeff Phillips's phone; after the worker ran:")
	for _, id := range []string{"Events", "Marketing"} {
		if err := printDepartment(ctx, out, depts, "Departments", id); err != nil {
			return err
		}
	}
	return nil
}

func printDepartment(ctx context.Context, out io.Writer, depts *repo.Table[Department], pk, rk string) error {
	d, err := depts.Get(ctx, pk, rk) // one point query: the department and its manager
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "point query %s/%s: %s, %d employees, manager %s (%s, %s)\n", pk, rk, d.Name, d.EmployeeCount, d.ManagerName, d.ManagerPhone, d.ManagerEmail)
	return nil
}

func printCopies(ctx context.Context, out io.Writer, rel *denormalize.Relation[Employee, Department], pk, rk string) error {
	ks, err := rel.Copies(ctx, denormalize.Key{PartitionKey: pk, RowKey: rk})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s/%s is copied into %d:", pk, rk, len(ks))
	for _, k := range ks {
		fmt.Fprintf(out, " %s/%s", k.PartitionKey, k.RowKey)
	}
	fmt.Fprintln(out)
	return nil
}
