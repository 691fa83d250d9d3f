package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The team's archiver builds the email index over employees stored before it, finds a
// copy deleted by hand with a verify job, and repairs it.
func TestIndexArchiverExampleRuns(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cs := testenv.ConnectionString(t)
	clients, err := account.NewClients(cs, nil)
	if err != nil {
		t.Fatal(err)
	}
	table, queue := testenv.TableName(t), testenv.QueueName(t)
	emps, err := repo.New[Employee](clients.Tables, table, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := emps.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emps.DeleteTable(context.Background()) })
	staff := []*Employee{
		{Department: "Sales", EmployeeID: "000123", FirstName: "Don", LastName: "Hall", Email: "donh@contoso.com"},
		{Department: "Sales", EmployeeID: "000223", FirstName: "Jun", LastName: "Jones", Email: "JonesJ@contoso.com"},
		{Department: "HR", EmployeeID: "000301", FirstName: "Al", LastName: "Smith", Email: "als@contoso.com"},
	}
	if err := emps.BulkWrite(ctx, staff, nil); err != nil {
		t.Fatal(err)
	}
	ext := extensions(table)
	archiver := func(args ...string) string {
		t.Helper()
		var out, errOut strings.Builder
		getenv := func(k string) string {
			if k == "TP_CONN" {
				return cs
			}
			return ""
		}
		// No deadline of its own: a run that never ends hangs until go test -timeout.
		if code := app.MainWith(ctx, append(args, "-queue", queue, "-connection-string-env", "TP_CONN"), &out, &errOut, getenv, ext); code != 0 {
			t.Fatalf("%q: exit %d\n%s\n%s", args, code, out.String(), errOut.String())
		}
		return errOut.String()
	}
	run := []string{"run", "-drain", "-allow-tables", table, "-allow-containers", "cold"}

	archiver("enqueue", "backfill", "-index", "employee-email")
	archiver(run...)
	q, err := queueworker.NewClient(clients.Queues.NewQueueClient(queue), nil)
	if err != nil {
		t.Fatal(err)
	}
	x, err := secondaryindex.NewInter(clients.Tables, table, q, []secondaryindex.Index[Employee]{byEmail}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := x.Lookup(ctx, "Sales", "email", "jonesj@contoso.com"); err != nil || e.EmployeeID != "000223" {
		t.Fatalf("lookup after the backfill: %+v %v", e, err)
	}

	if _, err := clients.Tables.NewClient(table).DeleteEntity(ctx, "email_Sales", keys.Join("donh@contoso.com", "000123"), nil); err != nil {
		t.Fatal(err)
	}
	archiver("enqueue", "verify", "-index", "employee-email", "-pk", "Sales")
	logs := archiver(run...)
	if !strings.Contains(logs, "index verify") || !strings.Contains(logs, `"missing": 1`) || !strings.Contains(logs, `"rk": "000123"`) {
		t.Fatalf("verify did not report the deleted copy:\n%s", logs)
	}
	archiver("enqueue", "repair", "-index", "employee-email")
	logs = archiver(run...)
	if !strings.Contains(logs, "index repair") || !strings.Contains(logs, `"repaired": 1`) {
		t.Fatalf("repair did not report:\n%s", logs)
	}
	if e, err := x.Lookup(ctx, "Sales", "email", "donh@contoso.com"); err != nil || e.EmployeeID != "000123" {
		t.Fatalf("lookup after the repair: %+v %v", e, err)
	}
	for _, pk := range []string{"Sales", "HR"} {
		if r, err := x.Verify(ctx, pk, nil); err != nil || r.Drift() != 0 {
			t.Fatal(fmt.Sprint(pk, r, err))
		}
	}
}
