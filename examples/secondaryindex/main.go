// Command secondaryindex runs both secondary index patterns of the table design guide
// (the Azure Table storage design guide, "intra-partition secondary index pattern" and "inter-partition secondary
// index pattern") on the guide's employees, on an embedded, in-memory Azurite.
//
// Intra-partition: each employee is stored as "empid_000223" and
// "email_jonesj@contoso.com" in the Sales partition, both written in one transaction;
// lookups by id or email are point queries, ranges come in id or email order.
//
// Inter-partition: the email copies live in the partition "email_Sales", written by a
// queue worker after each change of an employee, and are read with or without
// verification against the employee.
//
//	go run ./examples/secondaryindex
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

func main() { tabletest.Main("secondaryindex", run) }

// Employee is the guide's employee entity. Department is the PartitionKey; the RowKey is
// set by the index (intra: "empid_000223") or is the employee id (inter).
type Employee struct {
	Department string `table:",pk"`
	RowKey     string `table:",rk"`
	EmployeeID string `table:"EmployeeId"`
	FirstName  string `table:"FirstName"`
	LastName   string `table:"LastName"`
	Age        int32  `table:"Age"`
	Email      string `table:"Email,omitempty"`
	ETag       string `table:",etag"`
}

var staff = []struct {
	id          int64
	first, last string
	age         int32
	email       string
}{
	{123, "Don", "Hall", 34, "donh@contoso.com"},
	{152, "Jun", "Cao", 47, "junc@contoso.com"},
	{155, "Ken", "Kwok", 23, "kenk@contoso.com"},
	{223, "Jun", "Jones", 45, "jonesj@contoso.com"},
	{224, "Amy", "Adams", 29, "amya@contoso.com"},
	{301, "Al", "Smith", 52, "als@contoso.com"},
}

func employees() []*Employee {
	out := make([]*Employee, len(staff))
	for i, s := range staff {
		id, _ := keys.Pad(s.id, 6) // "000123": ids sort as numbers
		out[i] = &Employee{Department: "Sales", EmployeeID: id, FirstName: s.first, LastName: s.last, Age: s.age, Email: s.email}
	}
	return out
}

// The indexes of the guide: by employee id (the primary of the intra-partition pattern) and
// by email, whose copies carry only what a lookup by email needs (no Age). Emails are
// compared without case: the index lower-cases them on every write and every lookup.
var (
	byID    = secondaryindex.Index[Employee]{Name: "empid", Value: func(e *Employee) string { return e.EmployeeID }}
	byEmail = secondaryindex.Index[Employee]{Name: "email", Value: func(e *Employee) string { return e.Email },
		Normalize: strings.ToLower, Properties: []string{"EmployeeId", "FirstName", "LastName", "Email"}}
)

func run(ctx context.Context, out io.Writer, connStr string) error {
	clients, err := account.NewClients(connStr, nil)
	if err != nil {
		return err
	}
	suffix := time.Now().UnixNano() % 1e12
	if err := intra(ctx, out, clients, fmt.Sprintf("EmployeesIntra%d", suffix)); err != nil {
		return err
	}
	if err := inter(ctx, out, clients, fmt.Sprintf("EmployeesInter%d", suffix), fmt.Sprintf("employee-index-%d", suffix)); err != nil {
		return err
	}
	fmt.Fprintln(out, "secondary indexes finished")
	return nil
}

func intra(ctx context.Context, out io.Writer, clients *account.Clients, table string) error {
	fmt.Fprintln(out, "== intra-partition secondary index ==")
	employeesTable, err := repo.New[Employee](clients.Tables, table, nil)
	if err != nil {
		return err
	}
	x, err := secondaryindex.NewIntra(employeesTable, byID, []secondaryindex.Index[Employee]{byEmail}, nil)
	if err != nil {
		return err
	}
	if err := x.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer x.DeleteTable(context.WithoutCancel(ctx))
	for _, e := range employees() {
		if err := x.Insert(ctx, e); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "stored %d employees, two entities each, one transaction each\n", len(staff))

	e, err := x.Lookup(ctx, "Sales", "email", "JonesJ@Contoso.com") // found: the index lower-cases
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "point query RowKey eq 'email_jonesj@contoso.com': %s %s, employee %s (copy %s)\n", e.FirstName, e.LastName, e.EmployeeID, e.RowKey)
	fmt.Fprint(out, "employee ids 000100 to 000199:")
	for e, err := range x.Range(ctx, "Sales", "empid", "000100", "000200", nil) {
		if err != nil {
			return err
		}
		fmt.Fprintf(out, " %s", e.EmployeeID)
	}
	fmt.Fprint(out, "\nemails starting with 'a', in email order:")
	for e, err := range x.Prefix(ctx, "Sales", "email", "a", nil) {
		if err != nil {
			return err
		}
		fmt.Fprintf(out, " %s", e.Email)
	}
	fmt.Fprintln(out)

	// A new email: the old copy is deleted and the new one inserted in one transaction.
	jones, err := x.Get(ctx, "Sales", "empid_000223") // the primary copy's keys
	if err != nil {
		return err
	}
	jones.Email = "jun.jones@contoso.com"
	if err := x.Update(ctx, &jones); err != nil {
		return err
	}
	_, errOld := x.Lookup(ctx, "Sales", "email", "jonesj@contoso.com")
	_, errNew := x.Lookup(ctx, "Sales", "email", "jun.jones@contoso.com")
	fmt.Fprintf(out, "after the email change: old address found: %t, new address found: %t\n", errOld == nil, errNew == nil)

	// Another employee cannot take an address in use: the whole write is refused.
	ken, err := x.Get(ctx, "Sales", "empid_000155")
	if err != nil {
		return err
	}
	ken.Email = "donh@contoso.com"
	var uv *secondaryindex.UniqueViolationError
	if err := x.Update(ctx, &ken); !errors.As(err, &uv) {
		return fmt.Errorf("a duplicate email was not refused: %v", err)
	}
	fmt.Fprintf(out, "giving Ken Don's email: refused, unique index %q already holds %q\n", uv.Index, uv.Value)
	n := 0
	for _, err := range x.Table().Query(ctx, repo.Query{}) {
		if err != nil {
			return err
		}
		n++
	}
	fmt.Fprintf(out, "the partition holds %d entities for %d employees\n", n, len(staff))
	return nil
}

func inter(ctx context.Context, out io.Writer, clients *account.Clients, table, queue string) error {
	fmt.Fprintln(out, "== inter-partition secondary index ==")
	q := clients.Queues.NewQueueClient(queue)
	if err := queueworker.CreateQueueIfNotExists(ctx, clients.Queues, queue, nil); err != nil {
		return err
	}
	defer func() {
		ctx := context.WithoutCancel(ctx)
		_, _ = q.Delete(ctx, nil)
		_, _ = clients.Queues.NewQueueClient(queue+queueworker.PoisonSuffix).Delete(ctx, nil)
	}()
	qc, err := queueworker.NewClient(q, nil)
	if err != nil {
		return err
	}
	// The safety message of each write stays invisible for 2 s here (5 min by default), so
	// that the example does not wait long for the worker to drain the queue.
	x, err := secondaryindex.NewInter(clients.Tables, table, qc, []secondaryindex.Index[Employee]{byEmail},
		&secondaryindex.InterOptions{SafetyDelay: 2 * time.Second})
	if err != nil {
		return err
	}
	if err := x.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer x.Table().DeleteTable(context.WithoutCancel(ctx))
	reg := queueworker.NewRegistry()
	if err := x.Register(reg); err != nil {
		return err
	}
	w, err := queueworker.New(queueworker.Config{Queue: q, Service: clients.Queues, Registry: reg,
		MinPollInterval: 20 * time.Millisecond, MaxPollInterval: 200 * time.Millisecond})
	if err != nil {
		return err
	}

	for _, e := range employees() {
		e.RowKey = e.EmployeeID // the primary table is keyed by department and id
		if err := x.Insert(ctx, e); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "stored %d employees in Sales; reconciliation messages enqueued\n", len(staff))
	_, err = x.Lookup(ctx, "Sales", "email", "kenk@contoso.com")
	fmt.Fprintf(out, "before the worker runs, kenk@contoso.com in email_Sales: %t\n", err == nil)
	if err := w.Drain(ctx); err != nil {
		return err
	}
	e, err := x.Lookup(ctx, "Sales", "email", "kenk@contoso.com")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "after the worker ran: kenk@contoso.com is employee %s %s (%d messages processed)\n", e.EmployeeID, e.LastName, w.Stats().Processed)

	// A change: until the worker runs, the copy is stale; a verified read says so.
	ken, err := x.Table().Get(ctx, "Sales", "000155")
	if err != nil {
		return err
	}
	ken.Email = "ken.kwok@contoso.com"
	if err := x.Update(ctx, &ken); err != nil {
		return err
	}
	stale := false // Find without Verify returns the copy as the worker last wrote it
	for _, err := range x.Find(ctx, "Sales", "email", "kenk@contoso.com", nil) {
		stale = stale || err == nil
	}
	_, verified := x.Lookup(ctx, "Sales", "email", "kenk@contoso.com") // always verified
	fmt.Fprintf(out, "before the worker runs, old address found: %t; verified against the primary: %t\n", stale, verified == nil)
	if err := w.Drain(ctx); err != nil {
		return err
	}
	_, errOld := x.Lookup(ctx, "Sales", "email", "kenk@contoso.com")
	e, errNew := x.Lookup(ctx, "Sales", "email", "ken.kwok@contoso.com")
	if errNew != nil {
		return errNew
	}
	fmt.Fprintf(out, "after the worker ran: old address found: %t, new address is employee %s\n", errOld == nil, e.EmployeeID)
	fmt.Fprint(out, "email_Sales in email order:")
	for e, err := range x.Range(ctx, "Sales", "email", "", "", nil) {
		if err != nil {
			return err
		}
		fmt.Fprintf(out, " %s", e.Email)
	}
	fmt.Fprintln(out)
	return nil
}
