// Command demo runs tablepatterns' main job end to end on an embedded, in-memory Azurite:
// it stores a few of the guide's employees, reads them back by point query and by
// partition query, and changes one under optimistic concurrency.
//
//	make demo
//
// With -use-env it runs against the account of AZURE_STORAGE_CONNECTION_STRING instead
// (it creates a table with a unique name and deletes it at the end).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/azurite"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

func main() {
	useEnv := flag.Bool("use-env", false, "use the account of AZURE_STORAGE_CONNECTION_STRING instead of an embedded Azurite")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := start(ctx, os.Stdout, *useEnv); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func start(ctx context.Context, out io.Writer, useEnv bool) error {
	connStr := os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
	if !useEnv {
		fmt.Fprintln(out, "starting an in-memory Azurite on 127.0.0.1 ...")
		srv, err := azurite.Start(ctx, azurite.Options{})
		if err != nil {
			return err
		}
		defer srv.Close()
		connStr = srv.ConnectionString
	} else if connStr == "" {
		return errors.New("-use-env: AZURE_STORAGE_CONNECTION_STRING is not set")
	}
	return run(ctx, out, connStr, fmt.Sprintf("DemoEmployees%d", time.Now().UnixNano()%1e9))
}

// Employee is the guide's employee entity: the department is the PartitionKey and the
// employee id the RowKey, so that a department is one partition.
type Employee struct {
	Department string    `table:",pk"`
	EmployeeID string    `table:",rk"`
	FirstName  string    `table:"FirstName"`
	LastName   string    `table:"LastName"`
	Age        int32     `table:"Age"`
	Email      string    `table:"Email"`
	HireDate   time.Time `table:"HireDate"`
	ETag       string    `table:",etag"`
}

var staff = []Employee{
	{Department: "Sales", EmployeeID: "000123", FirstName: "Don", LastName: "Hall", Age: 34, Email: "donh@contoso.com"},
	{Department: "Sales", EmployeeID: "000152", FirstName: "Jun", LastName: "Cao", Age: 47, Email: "junc@contoso.com"},
	{Department: "Sales", EmployeeID: "000155", FirstName: "Ken", LastName: "Kwok", Age: 23, Email: "kenk@contoso.com"},
	{Department: "Marketing", EmployeeID: "000223", FirstName: "Jeff", LastName: "Phillips", Age: 45, Email: "jeffp@contoso.com"},
}

func run(ctx context.Context, out io.Writer, connStr, tableName string) error {
	clients, err := repo.NewClients(connStr, nil)
	if err != nil {
		return err
	}
	emps, err := repo.New[Employee](clients.Tables, tableName, nil)
	if err != nil {
		return err
	}
	if err := emps.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer emps.DeleteTable(context.WithoutCancel(ctx))

	items := make([]*Employee, len(staff))
	for i := range staff {
		e := staff[i]
		e.HireDate = time.Date(2010+i, 4, 1, 9, 0, 0, 0, time.UTC)
		items[i] = &e
	}
	if err := emps.BulkWrite(ctx, items, nil); err != nil {
		return err
	}
	fmt.Fprintf(out, "stored %d employees in table %s\n", len(items), tableName)

	e, err := emps.Get(ctx, "Sales", "000152")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "point query Sales/000152: %s %s, %d, hired %s\n", e.FirstName, e.LastName, e.Age, e.HireDate.Format("2006-01-02"))

	sales, err := emps.Collect(ctx, repo.Query{Filter: filter.PartitionKey("Sales")})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "partition query Sales: %d employees\n", len(sales))
	for _, s := range sales {
		fmt.Fprintf(out, "  %s  %-5s %-8s %s\n", s.EmployeeID, s.FirstName, s.LastName, s.Email)
	}

	// Optimistic concurrency: the first update wins, the stale copy is refused.
	stale := e
	e.Age++
	if err := emps.Update(ctx, &e, nil); err != nil {
		return err
	}
	stale.Email = "someone-else@contoso.com"
	if err := emps.Update(ctx, &stale, nil); !errors.Is(err, repo.ErrPreconditionFailed) {
		return fmt.Errorf("a stale update was not refused: %v", err)
	}
	fmt.Fprintln(out, "update with the current ETag: stored; update with a stale ETag: refused (ErrPreconditionFailed)")
	fmt.Fprintln(out, "demo finished")
	return nil
}
