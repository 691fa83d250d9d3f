package tablearchive

import (
	"context"
	"errors"
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

func TestMain(m *testing.M) { testenv.Main(m) }

var errCrash = errors.New("simulated crash")

// bed is one test's archiver and two tables (a table to export, a second one).
type bed struct {
	ctx              context.Context
	clients          *account.Clients
	a                *Archiver
	current, archive *repo.Table[codec.Entity]
}

func fastRetry() retry.Policy {
	return retry.Policy{Delay: 2 * time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxRetries: 20}
}

func setup(t *testing.T, connStr string) *bed {
	t.Helper()
	if connStr == "" {
		connStr = testenv.ConnectionString(t)
	}
	clients, err := account.NewClients(connStr, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(clients, &Options{Retry: fastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	b := &bed{ctx: t.Context(), clients: clients, a: a}
	b.current = b.newTable(t, "Current")
	b.archive = b.newTable(t, "Archive")
	return b
}

func (b *bed) newTable(t *testing.T, role string) *repo.Table[codec.Entity] {
	t.Helper()
	name := testenv.TableName(t)
	tb, err := repo.New[codec.Entity](b.clients.Tables, name[:min(len(name), 50)]+role, &repo.Options{Retry: fastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.CreateIfNotExists(b.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = tb.DeleteTable(ctx)
	})
	return tb
}

func employee(pk, rk string, age int32) *codec.Entity {
	return &codec.Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]any{
		"FirstName": "Jun", "LastName": "Cao", "Age": age, "Salary": int64(1) << 41,
		"HireDate": time.Date(2011, 3, 4, 5, 6, 7, 800, time.UTC), "Badge": codec.GUID{9, 8, 7},
	}}
}

// another returns a second Archiver on the same clients (its own step hook: a second
// worker process).
func (b *bed) another(t *testing.T) *Archiver {
	t.Helper()
	a, err := New(b.clients, &Options{Retry: fastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// newWorker returns a worker for a's jobs on a fresh queue of b's account, and a client
// that enqueues on it.
func newWorker(t *testing.T, b *bed, queue string, a *Archiver) (*queueworker.Worker, *queueworker.Client) {
	t.Helper()
	q := b.clients.Queues.NewQueueClient(queue)
	if _, err := q.Create(b.ctx, nil); err != nil && !strings.Contains(err.Error(), "QueueAlreadyExists") {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = q.Delete(ctx, nil)
		_, _ = b.clients.Queues.NewQueueClient(queue+queueworker.PoisonSuffix).Delete(ctx, nil)
	})
	reg := queueworker.NewRegistry()
	if err := a.Register(reg); err != nil {
		t.Fatal(err)
	}
	w, err := queueworker.New(queueworker.Config{
		Queue: q, Service: b.clients.Queues, Registry: reg, Concurrency: 16,
		VisibilityTimeout: 20 * time.Second, MinPollInterval: 10 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond,
		Retry: fastRetry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := queueworker.NewClient(q, &queueworker.ClientOptions{Retry: fastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	return w, c
}

func drain(t *testing.T, w *queueworker.Worker) {
	t.Helper()
	// A thousand jobs through 20 % faults take about 50 s alone, several times that under
	// -race beside the whole suite on a 2-core machine: wait while the worker moves.
	progress := func() int64 {
		s := w.Stats()
		return s.Dequeued + s.Processed + s.Failed + s.Retried + s.Snoozed + s.Interrupted + s.Poisoned + s.Renewed
	}
	if err := testenv.UntilStalled(t.Context(), 0, progress, w.Drain); err != nil {
		t.Fatalf("drain: %v (stats %+v)", err, w.Stats())
	}
}
