package tablearchive

import (
	"context"
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/archivetest"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
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

// The shared test bed of the archive packages (package archivetest).
var (
	fastRetry = archivetest.FastRetry
	employee  = archivetest.Employee
	drain     = archivetest.Drain
)

func setup(t *testing.T, connStr string) *bed {
	t.Helper()
	clients := archivetest.Clients(t, connStr)
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
	return archivetest.NewTable(t, b.clients, role)
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
	return archivetest.NewWorker(t, b.clients, queue, a.Register)
}
