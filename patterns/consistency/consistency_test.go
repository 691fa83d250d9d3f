package consistency

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/archivetest"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var errCrash = errors.New("simulated crash")

// bed is one test's Current and Archive tables.
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

func (b *bed) job(pk, rk string) ArchiveEntityJob {
	return ArchiveEntityJob{Source: b.current.Name(), PartitionKey: pk, RowKey: rk, TargetTable: b.archive.Name()}
}

// assertArchived checks the final state of a move: in Archive exactly once, with the
// entity's properties, and absent from Current.
func (b *bed) assertArchived(t *testing.T, pk, rk string, want *codec.Entity) {
	t.Helper()
	if _, err := b.current.Get(b.ctx, pk, rk); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("%s/%s still in Current: %v", pk, rk, err)
	}
	got, err := b.archive.Get(b.ctx, pk, rk)
	if err != nil {
		t.Fatalf("%s/%s not in Archive: %v", pk, rk, err)
	}
	for k, v := range want.Properties {
		g := got.Properties[k]
		if tv, ok := v.(time.Time); ok {
			if gt, ok := g.(time.Time); !ok || !gt.Equal(tv) {
				t.Fatalf("%s: %v, want %v", k, g, v)
			}
			continue
		}
		if g != v {
			t.Fatalf("%s/%s %s: %#v, want %#v", pk, rk, k, g, v)
		}
	}
}

func TestArchiveEntityMoves(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	e := employee("Sales", "000123", 34)
	if err := b.current.Insert(b.ctx, e); err != nil {
		t.Fatal(err)
	}
	out, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", "000123"))
	if err != nil || out != OutcomeMoved {
		t.Fatalf("move: %v %v", out, err)
	}
	b.assertArchived(t, "Sales", "000123", e)

	// A second delivery of the same job: already done, success.
	out, err = b.a.ArchiveEntity(b.ctx, b.job("Sales", "000123"))
	if err != nil || out != OutcomeAlreadyArchived {
		t.Fatalf("replay: %v %v", out, err)
	}
	// Neither in Current nor in Archive: missing, not an error.
	out, err = b.a.ArchiveEntity(b.ctx, b.job("Sales", "nobody"))
	if err != nil || out != OutcomeMissing {
		t.Fatalf("missing: %v %v", out, err)
	}
}

// Stop the move after each of its steps, then run it again: the final state is always the
// same, whichever step it stopped after.
func TestArchiveEntityStopAfterEveryStep(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	for i, step := range []string{"read", "copied", "deleted"} {
		rk := fmt.Sprintf("%06d", i)
		e := employee("Sales", rk, int32(30+i))
		if err := b.current.Insert(b.ctx, e); err != nil {
			t.Fatal(err)
		}
		b.a.seams.step = func(job, s string) error {
			if s == step {
				return errCrash
			}
			return nil
		}
		if _, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", rk)); !errors.Is(err, errCrash) {
			t.Fatalf("stop after %s: %v", step, err)
		}
		b.a.seams.step = nil
		out, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", rk))
		if err != nil {
			t.Fatalf("rerun after %s: %v", step, err)
		}
		want := OutcomeMoved
		if step == "deleted" {
			want = OutcomeAlreadyArchived
		}
		if out != want {
			t.Fatalf("rerun after %s: %s, want %s", step, out, want)
		}
		b.assertArchived(t, "Sales", rk, e)
	}
}

// The same message delivered to several workers at once ends in the same state.
func TestArchiveEntityConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	e := employee("Sales", "000155", 23)
	if err := b.current.Insert(b.ctx, e); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	outs := make(chan Outcome, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", "000155"))
			if err != nil {
				t.Error(err)
			}
			outs <- out
		}()
	}
	wg.Wait()
	close(outs)
	moved := 0
	for out := range outs {
		switch out {
		case OutcomeMoved:
			moved++
		case OutcomeAlreadyArchived:
		default:
			t.Fatalf("outcome %q", out)
		}
	}
	if moved == 0 {
		t.Fatal("no delivery moved the entity")
	}
	b.assertArchived(t, "Sales", "000155", e)
}

// The application updates the employee between the copy and the delete: the conditional
// delete fails and the move starts over, so the archive holds the new version.
func TestArchiveEntitySourceChangedDuringMove(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	if err := b.current.Insert(b.ctx, employee("Sales", "000200", 40)); err != nil {
		t.Fatal(err)
	}
	newer := employee("Sales", "000200", 41)
	var once sync.Once
	b.a.seams.step = func(job, s string) error {
		if s == "copied" {
			once.Do(func() {
				if err := b.current.Upsert(b.ctx, employee("Sales", "000200", 41), nil); err != nil {
					t.Error(err)
				}
			})
		}
		return nil
	}
	out, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", "000200"))
	if err != nil || out != OutcomeMoved {
		t.Fatalf("move: %v %v", out, err)
	}
	b.assertArchived(t, "Sales", "000200", newer)
}

func TestArchiveEntityToBlob(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	e := employee("o'brien & co", "100% ü", 50)
	if err := b.current.Insert(b.ctx, e); err != nil {
		t.Fatal(err)
	}
	job := ArchiveEntityJob{Source: b.current.Name(), PartitionKey: e.PartitionKey, RowKey: e.RowKey, TargetContainer: container}
	for i, want := range []Outcome{OutcomeMoved, OutcomeAlreadyArchived} {
		out, err := b.a.ArchiveEntity(b.ctx, job)
		if err != nil || out != want {
			t.Fatalf("run %d: %v %v, want %s", i, out, err, want)
		}
	}
	got, err := b.a.ReadArchivedEntity(b.ctx, container, b.current.Name(), e.PartitionKey, e.RowKey)
	if err != nil {
		t.Fatal(err)
	}
	if got.PartitionKey != e.PartitionKey || got.RowKey != e.RowKey || got.Properties["Salary"] != int64(1)<<41 {
		t.Fatalf("archived blob: %+v", got)
	}
	if _, err := b.current.Get(b.ctx, e.PartitionKey, e.RowKey); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("still in Current: %v", err)
	}
}

func TestInvalidJobsRefusedWithoutRequest(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	mark := ps.Table.Count() + ps.Blob.Count()
	for name, job := range map[string]ArchiveEntityJob{
		"no target":        {Source: "Current", PartitionKey: "p", RowKey: "r"},
		"two targets":      {Source: "Current", PartitionKey: "p", RowKey: "r", TargetTable: "Archive", TargetContainer: "archive"},
		"same table":       {Source: "Current", PartitionKey: "p", RowKey: "r", TargetTable: "current"},
		"bad key":          {Source: "Current", PartitionKey: "p/q", RowKey: "r", TargetTable: "Archive"},
		"bad container":    {Source: "Current", PartitionKey: "p", RowKey: "r", TargetContainer: "Bad_Name"},
		"bad source table": {Source: "1x", PartitionKey: "p", RowKey: "r", TargetTable: "Archive"},
	} {
		if _, err := b.a.ArchiveEntity(b.ctx, job); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	for name, args := range map[string][4]string{
		"empty table": {"archive", "", "p", "r"}, "bad table": {"archive", "1x", "p", "r"},
		"bad container": {"Bad_Name", "Current", "p", "r"}, "bad key": {"archive", "Current", "p#", "r"},
	} {
		if _, err := b.a.ReadArchivedEntity(b.ctx, args[0], args[1], args[2], args[3]); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("read archived entity, %s: %v, want ErrInvalidInput", name, err)
		}
	}
	if n := ps.Table.Count() + ps.Blob.Count() - mark; n != 0 {
		t.Fatalf("%d requests sent for invalid jobs", n)
	}
}
