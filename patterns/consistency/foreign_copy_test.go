package consistency

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

// afterOnly is a companion whose only step is After (no Before), as Inter with
// SafetyDelay off: After fails while fail is set; Gone records its calls.
type afterOnly struct {
	mu     sync.Mutex
	fail   bool
	afters []string
	gones  []string
}

func (c *afterOnly) Removal(_ context.Context, e *codec.Entity) (Removal, error) {
	rk := e.RowKey
	return Removal{After: func(context.Context) error { return c.record(&c.afters, rk) }}, nil
}

func (c *afterOnly) Gone(_ context.Context, _, rk string) error { return c.record(&c.gones, rk) }

// record notes a call for rk in calls, and fails while fail is set.
func (c *afterOnly) record(calls *[]string, rk string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	*calls = append(*calls, rk)
	if c.fail {
		return errors.New("queue unavailable")
	}
	return nil
}

// setupAfterOnly is a bed whose archiver has one afterOnly companion, failing.
func setupAfterOnly(t *testing.T) (*bed, *Archiver, *afterOnly) {
	t.Helper()
	b := setup(t, "")
	c := &afterOnly{fail: true}
	a, err := New(b.clients, &Options{Retry: fastRetry(), Companions: map[string][]Companion{b.current.Name(): {c}}})
	if err != nil {
		t.Fatal(err)
	}
	return b, a, c
}

func (c *afterOnly) setFail(v bool) {
	c.mu.Lock()
	c.fail = v
	c.mu.Unlock()
}

// The single move into a target table that holds another source table's copy under the
// same keys refuses (permanent, keys in the error) before writing: both entities stay.
func TestEntityRefusesAnotherTablesCopy(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	other := b.newTable(t, "Other")
	if err := b.current.Insert(b.ctx, rangeEntity("Sales", 3, 1)); err != nil {
		t.Fatal(err)
	}
	if err := other.Insert(b.ctx, rangeEntity("Sales", 3, 99)); err != nil {
		t.Fatal(err)
	}
	if out, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", "000003")); err != nil || out != OutcomeMoved {
		t.Fatalf("first: %v %v", out, err)
	}
	second := ArchiveEntityJob{Source: other.Name(), PartitionKey: "Sales", RowKey: "000003", TargetTable: b.archive.Name()}
	_, err := b.a.ArchiveEntity(b.ctx, second)
	if !errors.Is(err, errs.ErrInvalidInput) || !permanent(err) {
		t.Fatalf("second: %v, want a permanent refusal", err)
	}
	cp, gerr := b.archive.Get(b.ctx, "Sales", "000003")
	if gerr != nil || cp.Properties["Version"] != int32(1) || cp.Properties[SourceTableProperty] != b.current.Name() {
		t.Fatalf("the first table's copy: %v %v", cp.Properties, gerr)
	}
	if _, gerr := other.Get(b.ctx, "Sales", "000003"); gerr != nil {
		t.Fatalf("the refused entity left its source: %v", gerr)
	}
}

// A row in the target table under the entity's keys that records no source table is no
// archive copy of this table: the move refuses it (permanent, nothing written), as it
// refuses another table's copy, and both rows stay.
func TestMoveRefusesTargetRowThatRecordsNoSourceTable(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	old := rangeEntity("Sales", 4, 0)
	old.Properties[SourceETagProperty] = "W/\"old\""
	if err := b.archive.CreateIfNotExists(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.archive.Insert(b.ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := b.current.Insert(b.ctx, rangeEntity("Sales", 4, 2)); err != nil {
		t.Fatal(err)
	}
	if out, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", "000004")); !errors.Is(err, errs.ErrInvalidInput) || !permanent(err) {
		t.Fatalf("move: %v %v, want a permanent refusal", out, err)
	}
	cp, err := b.archive.Get(b.ctx, "Sales", "000004")
	if err != nil || cp.Properties["Version"] != int32(0) {
		t.Fatalf("the target row: %v %v, want it untouched", cp.Properties, err)
	}
	if src, err := b.current.Get(b.ctx, "Sales", "000004"); err != nil || src.Properties["Version"] != int32(2) {
		t.Fatalf("the source: %v %v, want it in place", src.Properties, err)
	}
}

// After is the only step of a Removal and fails once the delete landed: the move fails
// (the job runs again); the rerun finds the entity gone and archived, and tells the
// Sweeper (Gone), whose error fails it too until it succeeds.
func TestFailedAfterWithoutBeforeFailsTheMove(t *testing.T) {
	t.Parallel()
	b, a, c := setupAfterOnly(t)
	if err := b.current.Insert(b.ctx, employee("Sales", "000001", 30)); err != nil {
		t.Fatal(err)
	}
	if out, err := a.ArchiveEntity(b.ctx, b.job("Sales", "000001")); err == nil {
		t.Fatalf("move answered %v with no error while its only copy-removing step failed", out)
	}
	if _, err := b.current.Get(b.ctx, "Sales", "000001"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("the delete did not land: %v", err)
	}
	if out, err := a.ArchiveEntity(b.ctx, b.job("Sales", "000001")); err == nil {
		t.Fatalf("rerun answered %v while Gone failed", out)
	}
	c.setFail(false)
	out, err := a.ArchiveEntity(b.ctx, b.job("Sales", "000001"))
	if err != nil || out != OutcomeAlreadyArchived {
		t.Fatalf("rerun: %v %v", out, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if fmt.Sprint(c.afters) != "[000001]" || fmt.Sprint(c.gones) != "[000001 000001]" {
		t.Fatalf("afters %v, gones %v", c.afters, c.gones)
	}
}

// The same in a range move: the batch committed, After fails: the job fails, and the
// report counts what was deleted.
func TestRangeFailedAfterWithoutBeforeFailsTheJob(t *testing.T) {
	t.Parallel()
	b, a, _ := setupAfterOnly(t)
	b.loadRange(t, []string{"Sales"}, 5)
	rep, err := a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()})
	if err == nil || !errors.Is(err, errMoveStepFailed) {
		t.Fatalf("range: %+v %v, want the After failure", rep, err)
	}
	if rep.Moved != 5 {
		t.Fatalf("moved %d, want 5 (the transaction committed)", rep.Moved)
	}
}

// Companions whose actions address the table in another spelling than the move's delete
// are refused before the archive copy is written (repo.CheckTransaction), permanently.
func TestSpellingMismatchRefusedBeforeWriting(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	if err := b.current.Insert(b.ctx, employee("Sales", "000001", 30)); err != nil {
		t.Fatal(err)
	}
	if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "copy_000001"}); err != nil {
		t.Fatal(err)
	}
	// The delete addresses b.current as spelled; the companion builds its action on a
	// Table whose name is spelled in upper case.
	upper, err := repo.New[codec.Entity](b.clients.Tables, strings.ToUpper(b.current.Name()), &repo.Options{Retry: fastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	c := companionFunc(func(_ context.Context, e *codec.Entity) (Removal, error) {
		if e.RowKey != "000001" {
			return Removal{}, nil
		}
		return Removal{Actions: []repo.Action{upper.DeleteAction("Sales", "copy_000001", nil)}}, nil
	})
	a, err := New(b.clients, &Options{Retry: fastRetry(), Companions: map[string][]Companion{b.current.Name(): {c}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.ArchiveEntity(b.ctx, b.job("Sales", "000001"))
	if !errors.Is(err, errs.ErrInvalidInput) {
		t.Fatalf("move: %v, want ErrInvalidInput", err)
	}
	if _, err := b.archive.Get(b.ctx, "Sales", "000001"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("the archive copy was written before the refusal: %v", err)
	}
}

type companionFunc func(context.Context, *codec.Entity) (Removal, error)

func (f companionFunc) Removal(ctx context.Context, e *codec.Entity) (Removal, error) {
	return f(ctx, e)
}

// The application deletes the entity between the move's copy and its delete: the delete
// meets 404 and the move finds its copy in the target (moved). After, the only step of a
// Removal without Before, runs all the same, and its failure fails the move.
func TestGoneBeforeTheDeleteStillRunsAfter(t *testing.T) {
	t.Parallel()
	b, a, c := setupAfterOnly(t)
	if err := b.current.Insert(b.ctx, employee("Sales", "000001", 30)); err != nil {
		t.Fatal(err)
	}
	a.seams.step = func(job, step string) error {
		if job == "archive-entity" && step == "copied" {
			return b.current.Delete(b.ctx, "Sales", "000001", nil)
		}
		return nil
	}
	if out, err := a.ArchiveEntity(b.ctx, b.job("Sales", "000001")); !errors.Is(err, errMoveStepFailed) {
		t.Fatalf("move: %v %v, want the After failure", out, err)
	}
	c.setFail(false)
	if out, err := a.ArchiveEntity(b.ctx, b.job("Sales", "000001")); err != nil || out != OutcomeAlreadyArchived {
		t.Fatalf("rerun: %v %v", out, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if fmt.Sprint(c.afters) != "[000001]" || fmt.Sprint(c.gones) != "[000001]" {
		t.Fatalf("afters %v, gones %v", c.afters, c.gones)
	}
}

// Two source tables archived into one target table, as one archive table per dataset of
// daily tables (periodtable) would be: the same keys in both (an order number that
// restarts each day). A copy records the source's ETag but not the source table, so the
// second table's range move takes the first table's copy for a stale copy of its own
// entity and replaces it (If-Match its ETag): the first table's entity, already deleted
// from its source, is then in no table at all. Nothing refuses the job. (Blob targets
// name the source table in the blob name, so they do not collide.) Expected: the second
// move leaves the other table's copy alone (refuses, or fails the batch), never replaces it.
func TestRangeTwoSourcesOneTargetTable(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	other := b.newTable(t, "Other")
	b.loadRange(t, []string{"Sales"}, 10) // Version 1 in Current
	if err := other.Insert(b.ctx, rangeEntity("Sales", 3, 99)); err != nil {
		t.Fatal(err)
	}
	first := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}
	if rep, err := b.a.ArchiveRange(b.ctx, first); err != nil || rep.Moved != 10 {
		t.Fatalf("first: %+v %v", rep, err)
	}
	second := ArchiveRangeJob{Source: other.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}
	rep, err := b.a.ArchiveRange(b.ctx, second)
	t.Logf("second: %+v %v", rep, err)
	cp, err := b.archive.Get(b.ctx, "Sales", "000003")
	if err != nil {
		t.Fatal(err)
	}
	if cp.Properties["Version"] != int32(1) {
		t.Fatalf("the copy of (Sales, 000003) of %s was replaced by the entity of %s (Version %v): the first entity is in no table now",
			b.current.Name(), other.Name(), cp.Properties["Version"])
	}
}
