// Command killworker is the worker process of the migration's kill tests: it runs the
// range jobs of one employees migration from a queue until it is killed: the re-keying
// migration, or with MIGRATE_MODE=schema the schema migration of employees.EmployeeSplit
// (MIGRATE_SOURCE its table). Its settings come from the environment (see run), the
// connection string from AZURE_STORAGE_CONNECTION_STRING.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/tablepatterns/tablepatterns/patterns/migrate"
	"github.com/tablepatterns/tablepatterns/patterns/migrate/internal/employees"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/retry"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "killworker:", err)
		os.Exit(1)
	}
}

func ms(name string) time.Duration {
	n, _ := strconv.Atoi(os.Getenv(name))
	return time.Duration(n) * time.Millisecond
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	clients, err := account.NewClients(os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), nil)
	if err != nil {
		return err
	}
	rp := retry.Policy{Delay: 5 * time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 50 * time.Millisecond, MaxRetries: 30, MaxElapsed: time.Minute}
	q, err := queueworker.NewClient(clients.Queues.NewQueueClient(os.Getenv("MIGRATE_QUEUE")), &queueworker.ClientOptions{Retry: rp})
	if err != nil {
		return err
	}
	reg := queueworker.NewRegistry()
	if os.Getenv("MIGRATE_MODE") == "schema" {
		err = registerSchema(clients, rp, q, reg)
	} else {
		err = registerReKeying(clients, rp, q, reg)
	}
	if err != nil {
		return err
	}
	w, err := queueworker.New(queueworker.Config{Queue: q.Queue(), Service: clients.Queues, Registry: reg,
		VisibilityTimeout: 2 * time.Second, MaxDequeueCount: 1000, MinPollInterval: 10 * time.Millisecond,
		MaxPollInterval: 200 * time.Millisecond, Retry: rp})
	if err != nil {
		return err
	}
	return w.Run(ctx)
}

// registerReKeying registers the re-keying migration of employees.Employee to
// employees.EmployeeV2 (MIGRATE_SOURCE to MIGRATE_TARGET).
func registerReKeying(clients *account.Clients, rp retry.Policy, q *queueworker.Client, reg *queueworker.Registry) error {
	src, err := repo.New[employees.Employee](clients.Tables, os.Getenv("MIGRATE_SOURCE"), &repo.Options{Retry: rp})
	if err != nil {
		return err
	}
	tgt, err := repo.New[employees.EmployeeV2](clients.Tables, os.Getenv("MIGRATE_TARGET"), &repo.Options{Retry: rp})
	if err != nil {
		return err
	}
	pageSize, _ := strconv.Atoi(os.Getenv("MIGRATE_PAGE_SIZE"))
	m, err := migrate.New(migrate.Spec[employees.Employee, employees.EmployeeV2]{
		Name: os.Getenv("MIGRATE_NAME"), Service: clients.Tables, Source: src, Target: tgt,
		Keys: employees.HashKeys, Transform: employees.Upgrade, Control: os.Getenv("MIGRATE_CONTROL"),
	}, &migrate.Options{Refresh: ms("MIGRATE_REFRESH_MS"), WriteTimeout: ms("MIGRATE_WRITE_TIMEOUT_MS"),
		ClockSkew: ms("MIGRATE_CLOCK_SKEW_MS"), PageSize: pageSize, Retry: rp, Queue: q})
	if err != nil {
		return err
	}
	return m.Register(reg)
}
