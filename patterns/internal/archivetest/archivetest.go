// Package archivetest is the test bed that the in-package tests of the two archive
// packages (patterns/consistency, patterns/tablearchive) share: fresh tables, a worker
// on a fresh queue, and draining it. Package testbed cannot serve them, since it imports
// consistency; it drains its workers with this package too.
//
// It stands on internal/testenv, so the test package's TestMain must call testenv.Main.
// Everything it creates is deleted by t.Cleanup.
package archivetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/retry"
)

// FastRetry returns the retry policy of the archive tests: waits of a few milliseconds
// and enough retries to ride out injected transient faults.
func FastRetry() retry.Policy {
	return retry.Policy{Delay: 2 * time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxRetries: 20}
}

// Clients returns the clients of the account at connStr ("": the test server's).
func Clients(t testing.TB, connStr string) *account.Clients {
	t.Helper()
	if connStr == "" {
		connStr = testenv.ConnectionString(t)
	}
	clients, err := account.NewClients(connStr, nil)
	if err != nil {
		t.Fatal(err)
	}
	return clients
}

// NewTable creates a fresh table of the test whose name ends with role ("Current",
// "Archive"), deleted by t.Cleanup.
func NewTable(t testing.TB, clients *account.Clients, role string) *repo.Table[codec.Entity] {
	t.Helper()
	name := testenv.TableName(t)
	tb, err := repo.New[codec.Entity](clients.Tables, name[:min(len(name), 50)]+role, &repo.Options{Retry: FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.CreateIfNotExists(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = tb.DeleteTable(ctx)
	})
	return tb
}

// Employee is an entity of the guide's employee shape with a property of every EDM type
// but Binary.
func Employee(pk, rk string, age int32) *codec.Entity {
	return &codec.Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]any{
		"FirstName": "Jun", "LastName": "Cao", "Age": age, "Salary": int64(1) << 41,
		"HireDate": time.Date(2011, 3, 4, 5, 6, 7, 800, time.UTC), "Badge": codec.GUID{9, 8, 7},
	}}
}

// NewWorker returns a worker of the handlers register adds (an archiver's Register) on
// queue, created in clients' account and deleted with its poison queue by t.Cleanup,
// and a client that enqueues on it.
func NewWorker(t testing.TB, clients *account.Clients, queue string, register func(*queueworker.Registry) error) (*queueworker.Worker, *queueworker.Client) {
	t.Helper()
	q := clients.Queues.NewQueueClient(queue)
	if _, err := q.Create(t.Context(), nil); err != nil && !strings.Contains(err.Error(), "QueueAlreadyExists") {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = q.Delete(ctx, nil)
		_, _ = clients.Queues.NewQueueClient(queue+queueworker.PoisonSuffix).Delete(ctx, nil)
	})
	reg := queueworker.NewRegistry()
	if err := register(reg); err != nil {
		t.Fatal(err)
	}
	w, err := queueworker.New(queueworker.Config{
		Queue: q, Service: clients.Queues, Registry: reg, Concurrency: 16,
		VisibilityTimeout: 20 * time.Second, MinPollInterval: 10 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond,
		Retry: FastRetry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := queueworker.NewClient(q, &queueworker.ClientOptions{Retry: FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	return w, c
}

// Drain runs w until its queue is empty and fails the test on an error. It waits as long
// as the worker makes progress (testenv.UntilStalled over Progress), however loaded the
// machine: only a worker that stops moving for testenv.DefaultStall is ended.
func Drain(t testing.TB, w *queueworker.Worker) {
	t.Helper()
	if err := testenv.UntilStalled(t.Context(), 0, func() int64 { return Progress(w) }, w.Drain); err != nil {
		t.Fatalf("drain: %v (stats %+v)", err, w.Stats())
	}
}

// Progress sums the counters of w that move while it works: each delivery, its outcome,
// and each renewal of a lock a long handler holds.
func Progress(w *queueworker.Worker) int64 {
	s := w.Stats()
	return s.Dequeued + s.Processed + s.Failed + s.Retried + s.Snoozed + s.Interrupted + s.Poisoned + s.Renewed
}
