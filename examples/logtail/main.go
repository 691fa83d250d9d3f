// Command logtail runs the log tail pattern (the Azure Table storage design guide, "log tail pattern") on the guide's
// data, on an embedded, in-memory Azurite: employees submit expense claims, and the 10
// most recent claims of an employee are read with one request ($top=10), newest first,
// however many claims the employee has.
//
//	go run ./examples/logtail            # on an embedded Azurite
//	go run ./examples/logtail -use-env   # on the account of AZURE_STORAGE_CONNECTION_STRING
package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tablepatterns/tablepatterns/patterns/logtail"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

func main() { tabletest.Main("logtail", run) }

// start runs the example on an embedded Azurite, or with useEnv on the account of
// AZURE_STORAGE_CONNECTION_STRING (it creates uniquely named tables and deletes them).
// ExpenseClaim is one claim of the guide's EmployeeExpense table: the employee id is the
// PartitionKey, and the log tail owns the RowKey (inverted ticks of the submission time
// and the claim id).
type ExpenseClaim struct {
	EmployeeID  string    `table:",pk"`
	Key         string    `table:",rk"`
	ClaimID     string    `table:"ClaimID"`
	Submitted   time.Time `table:"Submitted"`
	Amount      float64   `table:"Amount"`
	Description string    `table:"Description"`
}

var descriptions = []string{"Taxi", "Hotel", "Lunch with customer", "Train", "Conference fee", "Books", "Parking"}

func run(ctx context.Context, out io.Writer, connStr string) error {
	clients, err := account.NewClients(connStr, nil)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("EmployeeExpense%d", time.Now().UnixNano()%1e12)
	claims, err := repo.New[ExpenseClaim](clients.Tables, name, nil)
	if err != nil {
		return err
	}
	if err := claims.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer claims.DeleteTable(context.WithoutCancel(ctx))
	log, err := logtail.New(claims, nil)
	if err != nil {
		return err
	}

	// Two years of claims for employee 000123, one every few days, stored with AppendAt:
	// the time is when the claim was submitted, the id is the claim's.
	start := time.Date(2023, 1, 2, 9, 0, 0, 0, time.UTC)
	const total = 250
	for i := range total {
		at := start.Add(time.Duration(i) * 70 * time.Hour)
		c := &ExpenseClaim{
			EmployeeID: "000123", ClaimID: fmt.Sprintf("EXP%05d", i+1), Submitted: at,
			Amount: float64(10+(i*37)%490) + 0.5, Description: descriptions[i%len(descriptions)],
		}
		if err := log.AppendAt(ctx, at, c.ClaimID, c); err != nil {
			return err
		}
	}
	// Another employee's claims live in their own partition.
	for i := range 3 {
		c := &ExpenseClaim{EmployeeID: "000152", ClaimID: fmt.Sprintf("EXP9%04d", i), Amount: 20, Description: "Taxi", Submitted: time.Now().UTC()}
		if _, err := log.Append(ctx, c); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "stored %d expense claims of employee 000123 in table %s\n", total, name)

	newest, err := log.Newest(ctx, "000123", 10)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "the 10 most recent claims of 000123 (one request, $top=10):")
	for _, c := range newest {
		at, id, err := log.ParseRowKey(c.Key)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  %s  %s  %-20s %8.2f  (RowKey %s -> %s)\n", c.Submitted.Format("2006-01-02"), id, c.Description, c.Amount, c.Key[:19], at.Format(time.RFC3339))
	}
	if len(newest) != 10 || newest[0].ClaimID != fmt.Sprintf("EXP%05d", total) {
		return fmt.Errorf("the newest claim is %s, want EXP%05d", newest[0].ClaimID, total)
	}

	// A time range is one range query on the RowKey, newest first.
	from, to := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 4, 1, 0, 0, 0, 0, time.UTC)
	n, sum := 0, 0.0
	for c, err := range log.Range(ctx, "000123", from, to) {
		if err != nil {
			return err
		}
		n++
		sum += c.Amount
	}
	fmt.Fprintf(out, "claims submitted in March 2024: %d, total %.2f\n", n, sum)
	fmt.Fprintln(out, "log tail finished")
	return nil
}
