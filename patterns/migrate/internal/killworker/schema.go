package main

import (
	"os"
	"strconv"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/patterns/migrate"
	"github.com/tablepatterns/tablepatterns/patterns/migrate/internal/employees"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/retry"
)

// registerSchema registers the schema migration of employees.EmployeeSplit (version 1
// Name, version 2 FirstName and LastName) on MIGRATE_SOURCE, its range jobs' pages
// MIGRATE_PAGE_SIZE rows (0: the default).
func registerSchema(clients *account.Clients, rp retry.Policy, q *queueworker.Client, reg *queueworker.Registry) error {
	tb, err := repo.New[employees.EmployeeSplit](clients.Tables, os.Getenv("MIGRATE_SOURCE"), &repo.Options{Retry: rp})
	if err != nil {
		return err
	}
	pageSize, _ := strconv.Atoi(os.Getenv("MIGRATE_PAGE_SIZE"))
	s, err := migrate.NewSchema(migrate.SchemaSpec[employees.EmployeeSplit]{Service: clients.Tables, Table: tb,
		Upgrades: []func(*codec.Entity) error{employees.SplitName}, Downgrades: []func(*codec.Entity) error{employees.JoinName},
		Name: os.Getenv("MIGRATE_NAME"), Control: os.Getenv("MIGRATE_CONTROL")},
		&migrate.SchemaOptions{Refresh: ms("MIGRATE_REFRESH_MS"), WriteTimeout: ms("MIGRATE_WRITE_TIMEOUT_MS"),
			ClockSkew: ms("MIGRATE_CLOCK_SKEW_MS"), Retry: rp, Queue: q, PageSize: pageSize})
	if err != nil {
		return err
	}
	return s.Register(reg)
}
