// Command keyspread runs the prepend/append anti-pattern of the Azure Table storage design guide on the guide's
// example, an application that logs employees' access to network resources, and the key
// designs of Tablestore's primary key design guide and "Designing a scalable partitioning strategy":
//
//  1. the key advisor finds the hot spots: the access log keyed by the hour (one partition
//     takes every write) and Tablestore's sequential order numbers (append-only);
//
//  2. the guide's fix (department and employee in the PartitionKey, time in the RowKey)
//     and a bucketed hour, read back with parallel queries merged in order;
//
//  3. hash prefixes for order numbers and concatenated partition keys that keep their order;
//
//  4. a short partition stress test of one partition ("Designing a scalable partitioning strategy").
//
//     go run ./examples/keyspread
//
// It starts an embedded, in-memory Azurite on loopback. With -use-env it runs against the
// account of AZURE_STORAGE_CONNECTION_STRING instead (it creates a table with a unique name
// and deletes it at the end).
package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/patterns/keyspread"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

func main() { tabletest.Main("keyspread", run) }

// Access is one access of an employee to a resource.
type Access struct {
	PartitionKey string `table:",pk"`
	RowKey       string `table:",rk"`
	Department   string `table:"Department"`
	EmployeeID   string `table:"EmployeeID"`
	Resource     string `table:"Resource"`
}

var departments = []string{"Sales", "Marketing", "Finance", "Engineering", "Support"}

// event is the i-th access of the simulated peak: 3,000 accesses in one second at 18:00,
// from 200 employees of 5 departments.
func event(i int) (at time.Time, dept, emp, resource string) {
	at = time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second / 3000)
	dept = departments[i%len(departments)]
	emp = fmt.Sprintf("%06d", 100+(i*7)%200)
	resource = []string{"vpn", "mail", "crm", "wiki"}[i%4]
	return
}

func run(ctx context.Context, out io.Writer, connStr string) error {
	const peak = 3000
	// 1. The advisor on the access log keyed by the hour (the design guide's problem).
	byHour := func(yield func(keyspread.Write) bool) {
		for i := range peak {
			at, _, _, _ := event(i)
			if !yield(keyspread.Write{PartitionKey: at.Format("2006010215"), Time: at}) {
				return
			}
		}
	}
	rep, err := keyspread.Advise(byHour, &keyspread.AdviseOptions{Target: keyspread.TargetGuide})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "advisor, PartitionKey = hour: %s, skew %.0f%%, peak %.0f entities/s\n  %s\n", rep.Pattern, 100*rep.Skew, rep.PeakRate, rep.Suggestion)

	// Tablestore's purchase records keyed by the sequential order number (Tablestore's primary key design guide).
	orders := make([]string, 1000)
	for i := range orders {
		orders[i] = fmt.Sprint(200001 + i)
	}
	rep, err = keyspread.AdviseKeys(orders, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "advisor, PartitionKey = order number: %s (%.0f%% of writes at the highest key)\n", rep.Pattern, 100*rep.AppendShare)
	hp, _ := keyspread.NewHashPrefix(4)
	hashed := make([]string, len(orders))
	for i, o := range orders {
		hashed[i] = hp.Key(o)
	}
	rep, _ = keyspread.AdviseKeys(hashed, nil)
	fmt.Fprintf(out, "advisor, PartitionKey = hash prefix + order number (%s, %s, ...): %s\n", hashed[0], hashed[1], rep.Pattern)

	// 2a. The guide's fix: PartitionKey department_employee, RowKey time_event: the log of
	// one employee is one partition, and the peak spreads over 200 partitions.
	compound := keys.MustNew("_")
	byEmployee := func(yield func(keyspread.Write) bool) {
		for i := range peak {
			at, dept, emp, _ := event(i)
			pk, _ := compound.Join(dept, emp)
			if !yield(keyspread.Write{PartitionKey: pk, Time: at}) {
				return
			}
		}
	}
	rep, err = keyspread.Advise(byEmployee, &keyspread.AdviseOptions{Target: keyspread.TargetGuide})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "advisor, PartitionKey = department_employee: %s, %d partitions, peak %.0f entities/s per partition\n", rep.Pattern, rep.Partitions, rep.PeakRate)

	// 2b. Keeping the hour as the natural partition but spreading it over buckets: the
	// hour is read back with one query per bucket, run in parallel and merged in order.
	clients, err := account.NewClients(connStr, nil)
	if err != nil {
		return err
	}
	tb, err := repo.New[Access](clients.Tables, fmt.Sprintf("AccessLog%d", time.Now().UnixNano()%1e9), nil)
	if err != nil {
		return err
	}
	if err := tb.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer tb.DeleteTable(context.WithoutCancel(ctx))
	buckets, err := keyspread.NewBuckets(8)
	if err != nil {
		return err
	}
	items := make([]*Access, 800)
	for i := range items {
		at, dept, emp, res := event(i)
		rk := keys.InvertedTicksUnique(at, fmt.Sprintf("%05d", i)) // newest first
		items[i] = &Access{PartitionKey: buckets.KeyBy(at.Format("2006010215"), rk), RowKey: rk, Department: dept, EmployeeID: emp, Resource: res}
	}
	if err := tb.BulkWrite(ctx, items, nil); err != nil {
		return err
	}
	perBucket := map[string]int{}
	for _, it := range items {
		perBucket[it.PartitionKey]++
	}
	fmt.Fprintf(out, "stored %d accesses of hour 2014073118 in %d bucket partitions (%s ... %s)\n", len(items), len(perBucket), buckets.Prefix(0)+"2014073118", buckets.Prefix(7)+"2014073118")
	fmt.Fprintln(out, "newest 3 accesses of the hour, merged across buckets:")
	for a, err := range keyspread.ReadPartition(ctx, tb, buckets, "2014073118", &keyspread.ReadOptions{Top: 3}) {
		if err != nil {
			return err
		}
		at, _, _ := keys.SplitInvertedTicksUnique(a.RowKey)
		fmt.Fprintf(out, "  %s %s/%s %s (partition %s)\n", at.Format("15:04:05.000"), a.Department, a.EmployeeID, a.Resource, a.PartitionKey)
	}
	n := 0
	for _, err := range keyspread.ReadPartition(ctx, tb, buckets, "2014073118", nil) {
		if err != nil {
			return err
		}
		n++
	}
	fmt.Fprintf(out, "the whole hour: %d accesses from %d queries\n", n, buckets.N())

	// 3. Concatenated partition keys (Tablestore's primary key design guide): padded integers and a low separator keep
	// the order of DeviceID, SellerID, CardID.
	concat, err := keyspread.NewConcat(keyspread.Field{Name: "DeviceID", Digits: 6}, keyspread.Field{Name: "SellerID"}, keyspread.Field{Name: "CardID", Digits: 6})
	if err != nil {
		return err
	}
	fmt.Fprint(out, "concatenated keys in order:")
	for _, r := range []struct {
		device int
		seller string
		card   int
	}{{16, "a100", 66661}, {54, "a100", 6777}, {54, "a1001", 6777}, {167, "a101", 283408}} {
		k, err := concat.Key(r.device, r.seller, r.card)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, " %s", k)
	}
	fmt.Fprintln(out)

	// 4. The partition stress test ("Designing a scalable partitioning strategy"), bounded: inserts aimed at one partition.
	insert := func(ctx context.Context, worker, i int) (int, error) {
		return 1, tb.Insert(ctx, &Access{PartitionKey: "Sales_000123", RowKey: fmt.Sprintf("%08d", i), Department: "Sales", EmployeeID: "000123", Resource: "vpn"})
	}
	stress, err := keyspread.Stress(ctx, insert, 10*time.Second, &keyspread.StressOptions{MaxOps: 400, Concurrency: 8, Target: keyspread.TargetGuide})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "stress test of partition Sales_000123: %d ops, %d errors, %.0f entities/s (target %d/s)\n", stress.Ops, stress.Errors, stress.EntitiesPerSecond, keyspread.TargetGuide)
	fmt.Fprintln(out, "key spreading example finished")
	return nil
}
