// Command indexarchiver is a team's own archiver binary: the stock archiver
// (queueworker/cmd/archiver) plus the team's employee email index, an inter-partition
// secondary index (the Azure Table storage design guide, "inter-partition secondary index
// pattern"), whose maintenance it runs as archiver job kinds. An index is Go code (the
// entity type and its key functions), so the stock binary cannot build one: a team
// builds this small main with app.MainWith and app.Extensions.
//
//	indexarchiver enqueue backfill -index employee-email           # build the index over the employees already stored
//	indexarchiver enqueue verify   -index employee-email [-pk Sales] # log the drift: counts and keys
//	indexarchiver enqueue repair   -index employee-email [-pk Sales] # fix it through the live path
//	indexarchiver run -drain -allow-tables Employees -allow-containers cold
//
// Every other command and flag is the stock archiver's (`indexarchiver help`). The
// account is the archiver's: AZURE_STORAGE_CONNECTION_STRING (or -connection-string-env
// NAME), without it the local Azurite on its default ports. The employees' table is
// Employees, or the one EMPLOYEES_TABLE names.
package main

import (
	"cmp"
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
	"github.com/tablepatterns/tablepatterns/repo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.MainWith(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv, extensions(cmp.Or(os.Getenv("EMPLOYEES_TABLE"), "Employees")))
	stop()
	os.Exit(code)
}

// Employee is the guide's employee entity: the department is the PartitionKey, the
// employee id the RowKey.
type Employee struct {
	Department string `table:",pk"`
	EmployeeID string `table:",rk"`
	FirstName  string `table:"FirstName"`
	LastName   string `table:"LastName"`
	Email      string `table:"Email,omitempty"`
	ETag       string `table:",etag"`
}

// byEmail is the email index: its copies live in the partition "email_<department>" and
// carry what a lookup by email needs. Emails are compared without case.
var byEmail = secondaryindex.Index[Employee]{Name: "email", Value: func(e *Employee) string { return e.Email },
	Normalize: strings.ToLower, Properties: []string{"FirstName", "LastName", "Email"}}

// emailIndex is the name the command line knows the index by (-index).
const emailIndex = "employee-email"

// extensions are this team's additions to the archiver, for the employees of table.
func extensions(table string) *app.Extensions {
	return &app.Extensions{
		Indexes: map[string]func(env *app.Env) (app.Index, error){
			// Built on the archiver's job queue and logger: the maintenance jobs and their
			// continuations land where `run` takes them, and verify and repair report on
			// the archiver's log. The index's reconciliation messages are handled by the
			// same worker, so the application may enqueue them on this queue too.
			emailIndex: func(env *app.Env) (app.Index, error) {
				return secondaryindex.NewInter(env.Clients.Tables, table, env.Queue, []secondaryindex.Index[Employee]{byEmail},
					&secondaryindex.InterOptions{Table: repo.Options{Logger: env.Logger}})
			},
		},
		// Archive moves out of the employees' table take the index copies along, when the
		// index is a consistency.Companion (the same index the worker maintains).
		Companions: func(env *app.Env) (map[string][]consistency.Companion, error) {
			ix, err := env.Index(emailIndex)
			if err != nil {
				return nil, err
			}
			if c, ok := ix.(consistency.Companion); ok {
				return map[string][]consistency.Companion{table: {c}}, nil
			}
			return nil, nil
		},
	}
}
