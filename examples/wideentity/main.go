// Command wideentity runs the wide entities pattern (the Azure Table storage design guide, "wide entities pattern")
// on the guide's data, on an embedded, in-memory Azurite: the number of IM messages each
// employee sent on each of the last 365 days — 365 properties, more than one entity may
// hold — stored as two physical entities of one partition, written together in one
// transaction and read back with one query.
//
//	go run ./examples/wideentity            # on an embedded Azurite
//	go run ./examples/wideentity -use-env   # on the account of AZURE_STORAGE_CONNECTION_STRING
package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/patterns/wideentity"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

func main() { tabletest.Main("wideentity", run) }

// start runs the example on an embedded Azurite, or with useEnv on the account of
// AZURE_STORAGE_CONNECTION_STRING (it creates uniquely named tables and deletes them).
var employees = []string{"000123", "000152", "000155"}

// yearStart is the first of the 365 days.
var yearStart = time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)

// dayName is the property of the day-th day of the year (1 to 365): D001 ... D365.
func dayName(day int) string { return fmt.Sprintf("D%03d", day) }

// dailyCount is the example's message count of employee e on day d: quiet at weekends.
func dailyCount(e, d int) int32 {
	if wd := yearStart.AddDate(0, 0, d-1).Weekday(); wd == time.Saturday || wd == time.Sunday {
		return int32((d + e) % 3)
	}
	return int32(20 + (d*7+e*13)%41)
}

func run(ctx context.Context, out io.Writer, connStr string) error {
	clients, err := account.NewClients(connStr, nil)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("MessageStats%d", time.Now().UnixNano()%1e12)
	// Wide entities need write tracking on their table: a transaction whose response was
	// lost is then recognised, never applied twice.
	table, err := repo.New[codec.Entity](clients.Tables, name, &repo.Options{TrackWrites: true})
	if err != nil {
		return err
	}
	store, err := wideentity.New(table, nil) // two chunks, like the guide
	if err != nil {
		return err
	}
	if err := store.Table().CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer store.Table().DeleteTable(context.WithoutCancel(ctx))

	// One logical entity per employee: 365 daily counts and the employee's name.
	for e, emp := range employees {
		props := map[string]any{"EmployeeName": fmt.Sprintf("employee %s", emp)}
		for d := 1; d <= 365; d++ {
			props[dayName(d)] = dailyCount(e, d)
		}
		if err := store.Insert(ctx, &wideentity.Entity{PartitionKey: "Sales", RowKey: emp, Properties: props}); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "stored 365 daily counts for %d employees, each in one transaction\n", len(employees))

	// What is stored: two physical entities per employee.
	chunks, err := store.Table().Collect(ctx, repo.Query{Filter: filter.RowKeyPrefix("Sales", keys.Join("000123", ""))})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "physical entities of 000123:")
	for _, c := range chunks {
		fmt.Fprintf(out, "  RowKey %-12s %3d properties + %s %v + %s %v\n", c.RowKey, len(c.Properties)-2,
			wideentity.RevProperty, c.Properties[wideentity.RevProperty], wideentity.ChunksProperty, c.Properties[wideentity.ChunksProperty])
	}

	// The count of one day changes: one merge of one property, on the chunk that holds it.
	const fixDay = 200
	if err := store.SetProperty(ctx, "Sales", "000123", dayName(fixDay), int32(99)); err != nil {
		return err
	}
	fmt.Fprintf(out, "set %s (%s) of 000123 to 99 with one merge\n", dayName(fixDay), yearStart.AddDate(0, 0, fixDay-1).Format("2006-01-02"))

	// A week of corrections that must land together: one read-modify-write transaction.
	if _, err := store.Update(ctx, "Sales", "000152", func(e *wideentity.Entity) error {
		for d := 1; d <= 7; d++ {
			e.Properties[dayName(d)] = int32(0)
		}
		e.Properties["Note"] = "first week reset: mailbox migration"
		return nil
	}); err != nil {
		return err
	}
	fmt.Fprintln(out, "reset the first week of 000152 in one transaction")

	// Read each logical entity back with one query and total it per month.
	for _, emp := range employees {
		e, err := store.Get(ctx, "Sales", emp)
		if err != nil {
			return err
		}
		var months [12]int
		total := 0
		for d := 1; d <= 365; d++ {
			n := int(e.Properties[dayName(d)].(int32))
			months[yearStart.AddDate(0, 0, d-1).Month()-1] += n
			total += n
		}
		fmt.Fprintf(out, "%s (%s, %d properties): %d messages in the year; by month %v\n", emp, e.Properties["EmployeeName"], len(e.Properties), total, months)
	}
	fmt.Fprintln(out, "wide entities finished")
	return nil
}
