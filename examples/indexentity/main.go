// Command indexentity runs the guide's index entities pattern (the Azure Table storage design guide) on its own data:
// finding employees by last name without scanning, with each of the guide's three options.
//
//	go run ./examples/indexentity
//
// Option 2 keeps an index entity per last name in each department's partition, changed
// with the employee in one entity group transaction; options 1 (a blob per last name) and
// 3 (index entities in a partition of their own) are maintained by a queue worker. The
// program starts an embedded, in-memory Azurite; with -use-env it runs against the account
// of AZURE_STORAGE_CONNECTION_STRING instead (it creates uniquely named tables, a queue and
// a container, and deletes them at the end).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/patterns/indexentity"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

func main() { tabletest.Main("indexentity", run) }

// Employee is the guide's employee entity: the department is the PartitionKey and the
// employee id the RowKey. The ETag field lets the index update it optimistically.
type Employee struct {
	Department string `table:",pk"`
	EmployeeID string `table:",rk"`
	FirstName  string `table:"FirstName"`
	LastName   string `table:"LastName"`
	Age        int32  `table:"Age"`
	Email      string `table:"Email"`
	ETag       string `table:",etag"`
}

func lastName(e *Employee) string { return e.LastName }

var staff = []Employee{
	{Department: "Sales", EmployeeID: "000123", FirstName: "Don", LastName: "Hall", Age: 34, Email: "donh@contoso.com"},
	{Department: "Sales", EmployeeID: "000152", FirstName: "Jun", LastName: "Jones", Age: 47, Email: "junj@contoso.com"},
	{Department: "Sales", EmployeeID: "000155", FirstName: "Ken", LastName: "Jones", Age: 23, Email: "kenj@contoso.com"},
	{Department: "Sales", EmployeeID: "000160", FirstName: "Ann", LastName: "Smith", Age: 38, Email: "anns@contoso.com"},
	{Department: "Marketing", EmployeeID: "000223", FirstName: "Jeff", LastName: "Jones", Age: 45, Email: "jeffj@contoso.com"},
}

// names are the unique resource names of one run.
type names struct{ employees, index, queue, container string }

func newNames() names {
	var b [4]byte
	_, _ = rand.Read(b[:])
	s := hex.EncodeToString(b[:])
	return names{employees: "IdxEmployees" + s, index: "IdxLastNames" + s, queue: "idx-lastname-" + s, container: "idx-lastname-" + s}
}

func run(ctx context.Context, out io.Writer, connStr string) error {
	clients, err := account.NewClients(connStr, nil)
	if err != nil {
		return err
	}
	n := newNames()
	emps, err := repo.New[Employee](clients.Tables, n.employees, nil)
	if err != nil {
		return err
	}
	if err := emps.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer emps.DeleteTable(context.WithoutCancel(ctx))

	if err := option2(ctx, out, emps); err != nil {
		return err
	}
	if err := options1and3(ctx, out, clients, n); err != nil {
		return err
	}
	fmt.Fprintln(out, "index entities example finished")
	return nil
}

// option2 is the index entity in the employees' own partition, kept exact by transactions.
func option2(ctx context.Context, out io.Writer, emps *repo.Table[Employee]) error {
	ix, err := indexentity.NewSamePartition(emps, "LastName", lastName, nil)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "== option 2: an index entity in the same partition, one transaction per write")
	for i := range staff {
		e := staff[i]
		if err := ix.Insert(ctx, &e); err != nil {
			return err
		}
	}
	// The index entities share the Sales partition with the employees, in a RowKey range
	// of their own.
	raw, err := repo.OfType[codec.Entity](emps)
	if err != nil {
		return err
	}
	lo, hi := ix.KeyRange()
	pages, err := raw.Collect(ctx, repo.Query{Filter: filter.RowKeyRange("Sales", lo, hi)})
	if err != nil {
		return err
	}
	for _, p := range pages {
		ids, _ := p.Properties["IDs"].(string)
		fmt.Fprintf(out, "index entity Sales/%s lists %s\n", p.RowKey, strings.ReplaceAll(ids, "\n", ", "))
	}
	if err := printFind(out, "Sales", "Jones", ix.Find(ctx, "Sales", "Jones", nil)); err != nil {
		return err
	}

	// Rename: the employee, the old index entity and the new one in one transaction.
	ken, err := emps.Get(ctx, "Sales", "000155")
	if err != nil {
		return err
	}
	ken.LastName = "Smith"
	if err := ix.Update(ctx, &ken); err != nil {
		return err
	}
	ids, err := ix.IDs(ctx, "Sales", "Jones")
	if err != nil {
		return err
	}
	jones := ids
	smith, _ := ix.IDs(ctx, "Sales", "Smith")
	fmt.Fprintf(out, "renamed 000155 Jones -> Smith in one transaction: Jones %v, Smith %v\n", jones, smith)

	// Twenty writers add Joneses at once: they contend on one index entity, retry on its
	// ETag with jittered backoff, and no id is lost.
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Go(func() {
			e := &Employee{Department: "Sales", EmployeeID: fmt.Sprintf("%06d", 900+i), FirstName: "New", LastName: "Jones", Age: 30, Email: fmt.Sprintf("new%d@contoso.com", i)}
			errs[i] = ix.Insert(ctx, e)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	ids, err = ix.IDs(ctx, "Sales", "Jones")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "20 concurrent writers added Joneses: the index lists %d ids\n", len(ids))
	return nil
}

// options1and3 keep the lists outside the partitions, maintained by a queue worker: for
// each option, employees written through the index, a worker, a rename.
func options1and3(ctx context.Context, out io.Writer, clients *account.Clients, n names) error {
	fmt.Fprintln(out, "== options 1 and 3: the lists live outside the partitions and a queue worker keeps them")
	indexTable, err := repo.New[codec.Entity](clients.Tables, n.index, nil)
	if err != nil {
		return err
	}
	if err := indexTable.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer indexTable.DeleteTable(context.WithoutCancel(ctx))
	tables, err := indexentity.NewTableStore(indexTable, "LastName", nil)
	if err != nil {
		return err
	}
	blobs, err := indexentity.NewBlobStore(clients.Blobs, n.container, &indexentity.BlobStoreOptions{Prefix: "lastname/"})
	if err != nil {
		return err
	}
	if err := blobs.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer clients.Blobs.DeleteContainer(context.WithoutCancel(ctx), n.container, nil)
	q := clients.Queues.NewQueueClient(n.queue)
	if err := queueworker.CreateQueueIfNotExists(ctx, clients.Queues, n.queue, nil); err != nil {
		return err
	}
	defer q.Delete(context.WithoutCancel(ctx), nil)
	defer clients.Queues.NewQueueClient(n.queue+queueworker.PoisonSuffix).Delete(context.WithoutCancel(ctx), nil)
	qc, err := queueworker.NewClient(q, nil)
	if err != nil {
		return err
	}
	blobName, _ := blobs.BlobName("Jones")
	pk, _ := tables.PartitionKey("Jones")
	for i, opt := range []struct {
		label string
		store indexentity.Store
	}{
		{"option 1, blob " + blobName, blobs},
		{"option 3, partition " + pk, tables},
	} {
		emps, err := repo.New[Employee](clients.Tables, fmt.Sprintf("%s%d", n.employees, i+1), nil)
		if err != nil {
			return err
		}
		if err := emps.CreateIfNotExists(ctx); err != nil {
			return err
		}
		defer emps.DeleteTable(context.WithoutCancel(ctx))
		ix, err := indexentity.NewEventual(emps, "LastName", lastName, opt.store, qc, nil)
		if err != nil {
			return err
		}
		reg := queueworker.NewRegistry()
		if err := ix.Register(reg); err != nil {
			return err
		}
		drain := func() error {
			w, err := queueworker.New(queueworker.Config{Queue: q, Service: clients.Queues, Registry: reg, MinPollInterval: 20 * time.Millisecond, MaxPollInterval: 200 * time.Millisecond})
			if err != nil {
				return err
			}
			return w.Drain(ctx)
		}
		for i := range staff {
			e := staff[i]
			if err := ix.Insert(ctx, &e); err != nil { // a message first, then the write
				return err
			}
		}
		if err := drain(); err != nil {
			return err
		}
		if err := printKeys(ctx, out, opt.label, opt.store, "Jones"); err != nil {
			return err
		}
		jeff, err := emps.Get(ctx, "Marketing", "000223")
		if err != nil {
			return err
		}
		jeff.LastName = "Smith"
		if err := ix.Update(ctx, &jeff); err != nil {
			return err
		}
		if err := drain(); err != nil {
			return err
		}
		if err := printKeys(ctx, out, "  after renaming Marketing/000223 to Smith, Jones", opt.store, "Jones"); err != nil {
			return err
		}
		if err := printFind(out, "across departments,", "Smith", ix.Find(ctx, "Smith", nil)); err != nil {
			return err
		}
	}
	return nil
}

func printKeys(ctx context.Context, out io.Writer, label string, s indexentity.Store, value string) error {
	ks, err := s.Keys(ctx, value)
	if err != nil {
		return err
	}
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = k.PartitionKey + "/" + k.RowKey
	}
	fmt.Fprintf(out, "%s lists %d: %s\n", label, len(ks), strings.Join(parts, ", "))
	return nil
}

// printFind prints the entities a Find yields, collected first to print their count.
func printFind(out io.Writer, pk, value string, find iter.Seq2[Employee, error]) error {
	var found []Employee
	for e, err := range find {
		if err != nil {
			return err
		}
		found = append(found, e)
	}
	fmt.Fprintf(out, "lookup %s %s: %d employees\n", pk, value, len(found))
	for _, e := range found {
		fmt.Fprintf(out, "  %-9s %s  %-4s %-6s %s\n", e.Department, e.EmployeeID, e.FirstName, e.LastName, e.Email)
	}
	return nil
}
