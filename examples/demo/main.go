// Command demo runs tablepatterns' main job end to end on an embedded, in-memory Azurite:
// it stores the guide's employees in a Current table and an old per-day table of sign-in
// attempts, enqueues archive jobs (some employees to an Archive table, one to a blob, the
// old day table to cold blob storage), runs the archiver until its queue drains, and
// prints what moved where.
//
//	make demo
//
// With -use-env it runs against the account of AZURE_STORAGE_CONNECTION_STRING instead
// (its tables, queue and container get unique names; the tables are deleted at the end).
package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/patterns/tablearchive"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

func main() {
	tabletest.Main("demo", func(ctx context.Context, out io.Writer, connStr string) error {
		return run(ctx, out, connStr, names{}.suffixed(fmt.Sprintf("%06d", time.Now().UnixNano()%1e6)))
	})
}

// names are the resources of one demo run.
type names struct {
	current, archive, day, queue, container string
}

func (n names) suffixed(s string) names {
	return names{current: "Employees" + s, archive: "EmployeesArchive" + s, day: "SignIns20240101x" + s,
		queue: "archive-jobs-" + strings.ToLower(s), container: "cold-" + strings.ToLower(s)}
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
	{Department: "Marketing", EmployeeID: "000224", FirstName: "Sara", LastName: "Davis", Age: 31, Email: "sarad@contoso.com"},
}

func run(ctx context.Context, out io.Writer, connStr string, n names) error {
	clients, err := account.NewClients(connStr, nil)
	if err != nil {
		return err
	}
	current, err := repo.New[Employee](clients.Tables, n.current, nil)
	if err != nil {
		return err
	}
	archive, err := repo.New[Employee](clients.Tables, n.archive, nil)
	if err != nil {
		return err
	}
	day, err := repo.New[codec.Entity](clients.Tables, n.day, nil)
	if err != nil {
		return err
	}
	cleanup := context.WithoutCancel(ctx)
	for _, create := range []func(context.Context) error{current.CreateIfNotExists, archive.CreateIfNotExists, day.CreateIfNotExists} {
		if err := create(ctx); err != nil {
			return err
		}
	}
	defer current.DeleteTable(cleanup)
	defer archive.DeleteTable(cleanup)
	defer day.DeleteTable(cleanup) // gone already once archived: ErrNotFound is fine

	// 1. The application's data: employees, and yesterday's sign-in attempts.
	items := make([]*Employee, len(staff))
	for i := range staff {
		e := staff[i]
		e.HireDate = time.Date(2010+i, 4, 1, 9, 0, 0, 0, time.UTC)
		items[i] = &e
	}
	if err := current.BulkWrite(ctx, items, nil); err != nil {
		return err
	}
	var attempts []*codec.Entity
	for i := 0; i < 500; i++ {
		attempts = append(attempts, &codec.Entity{
			PartitionKey: fmt.Sprintf("user%03d", i%40), RowKey: fmt.Sprintf("%05d", i),
			Properties: map[string]any{"At": time.Date(2024, 1, 1, 0, 0, i, 0, time.UTC), "Succeeded": i%5 != 0, "IP": fmt.Sprintf("10.0.0.%d", i%250)},
		})
	}
	if err := day.BulkWrite(ctx, attempts, nil); err != nil {
		return err
	}
	fmt.Fprintf(out, "stored %d employees in %s and %d sign-in attempts in the day table %s\n", len(items), n.current, len(attempts), n.day)

	// 2. Enqueue the archive jobs with the archiver's own command line: the message is the
	// durable intent of each eventually consistent move.
	getenv := func(k string) string {
		if k == "DEMO_CONNECTION_STRING" {
			return connStr
		}
		return ""
	}
	archiver := func(args ...string) error {
		args = append(args, "-queue", n.queue, "-connection-string-env", "DEMO_CONNECTION_STRING", "-log-level", "warn")
		var buf strings.Builder
		if code := app.Main(ctx, args, &buf, &buf, getenv); code != app.ExitOK {
			return fmt.Errorf("archiver %s: exit %d\n%s", args[0], code, buf.String())
		}
		fmt.Fprintf(out, "  $ archiver %s\n    %s", strings.Join(args[:len(args)-6], " "), buf.String())
		return nil
	}
	fmt.Fprintln(out, "enqueueing archive jobs:")
	for _, rk := range []string{"000152", "000155"} {
		if err := archiver("enqueue", consistency.KindArchiveEntity, "-source", n.current, "-pk", "Sales", "-rk", rk, "-target-table", n.archive); err != nil {
			return err
		}
	}
	if err := archiver("enqueue", consistency.KindArchiveEntity, "-source", n.current, "-pk", "Marketing", "-rk", "000224", "-target-container", n.container); err != nil {
		return err
	}
	if err := archiver("enqueue", tablearchive.KindArchiveTable, "-table", n.day, "-container", n.container, "-sealed"); err != nil {
		return err
	}

	// 3. Run the archiver until the queue drains.
	fmt.Fprintln(out, "running the archiver until the queue drains:")
	if err := archiver("run", "-drain", "-allow-tables", n.current+","+n.archive+","+n.day, "-allow-containers", n.container); err != nil {
		return err
	}

	// 4. What moved where.
	left, err := current.Collect(ctx, repo.Query{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s now holds %d employees:", n.current, len(left))
	for _, e := range left {
		fmt.Fprintf(out, " %s/%s", e.Department, e.EmployeeID)
	}
	fmt.Fprintln(out)
	moved, err := archive.Collect(ctx, repo.Query{Filter: filter.PartitionKey("Sales")})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s holds %d employees:", n.archive, len(moved))
	for _, e := range moved {
		fmt.Fprintf(out, " %s/%s (%s %s)", e.Department, e.EmployeeID, e.FirstName, e.LastName)
	}
	fmt.Fprintln(out)
	arch, err := consistency.New(clients, nil)
	if err != nil {
		return err
	}
	blob, err := arch.ReadArchivedEntity(ctx, n.container, n.current, "Marketing", "000224")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "blob %s/%s holds %s %s\n", n.container, consistency.EntityBlobName(n.current, "Marketing", "000224"),
		blob.Properties["FirstName"], blob.Properties["LastName"])
	tables, err := tablearchive.New(clients, nil)
	if err != nil {
		return err
	}
	m, err := tables.ReadManifest(ctx, n.container, n.day)
	if err != nil {
		return err
	}
	exists, err := day.Exists(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "day table %s: exported to %s/%s (%d entities in %d partitions, sha256 %s...); table deleted: %v\n",
		n.day, n.container, m.DataBlob, m.Entities, m.Partitions, m.SHA256[:12], !exists)
	fmt.Fprintln(out, "demo finished")
	return nil
}
