package consistency

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

// A store that refuses an entity's delete every time, while the entity is there at the
// version copied (Azurite's $batch addresses another row for a RowKey with U+2028, so a
// move whose companions need a transaction meets 404 on each try), fails the move once
// with a permanent error that says so: no restart after the second identical refusal,
// no "the source or the target changed", the entity left in the source with its copy.
func TestArchiveEntityRefusedDeleteFailsOnceAsPermanent(t *testing.T) {
	t.Parallel()
	b := setupCompanion(t, nil)
	rk := "a\u2028"
	if err := b.current.Insert(b.ctx, employee("Sales", rk, 30)); err != nil {
		t.Fatal(err)
	}
	if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "copy-" + rk, Properties: map[string]any{"Of": rk}}); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	b.a.step = func(job, step string) error {
		if step == "read" {
			attempts.Add(1)
		}
		return nil
	}
	out, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", rk))
	if err == nil || !errors.Is(err, errs.ErrInvalidInput) || errors.Is(err, errRestart) || !permanent(err) {
		t.Fatalf("move: %v %v; want a permanent ErrInvalidInput", out, err)
	}
	if strings.Contains(err.Error(), "changed during the move") || !strings.Contains(err.Error(), "refuses the delete") {
		t.Fatalf("the error does not say what happened: %v", err)
	}
	if n := attempts.Load(); n > 2 {
		t.Fatalf("the move ran %d attempts; want at most 2 (one to tell a one-off refusal from a permanent one)", n)
	}
	if _, err := b.current.Get(b.ctx, "Sales", rk); err != nil {
		t.Fatalf("the entity is no longer in the source: %v", err)
	}
	if _, err := b.archive.Get(b.ctx, "Sales", rk); err != nil {
		t.Fatalf("the copy is not in the target: %v", err)
	}
}

// lineSeparatorCopy is a companion whose copy of an entity sits at RowKey "copy\u2028"
// + the entity's RowKey: a row Azurite's $batch cannot address (its delete action
// addresses "copy" instead and answers 404).
type lineSeparatorCopy struct{ tbl *repo.Table[codec.Entity] }

func (c lineSeparatorCopy) Removal(ctx context.Context, e *codec.Entity) (Removal, error) {
	cp, err := c.tbl.Get(ctx, e.PartitionKey, "copy\u2028"+e.RowKey)
	if errors.Is(err, errs.ErrNotFound) {
		return Removal{}, nil
	}
	if err != nil {
		return Removal{}, err
	}
	return Removal{Actions: []repo.Action{c.tbl.DeleteAction(cp.PartitionKey, cp.RowKey, &repo.DeleteOptions{ETag: cp.ETag})}}, nil
}

// The same for a companion's copy that the store refuses to delete in the transaction
// (404) while it is there: the move fails once, permanently, and says that the store
// refused a companion's delete, never that the source or the target changed.
func TestArchiveEntityCompanionDeleteRefusedTwiceFailsOnceAsPermanent(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	a, err := New(b.clients, &Options{Retry: fastRetry(), Companions: map[string][]Companion{b.current.Name(): {lineSeparatorCopy{b.current}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.current.Insert(b.ctx, employee("Sales", "e1", 30)); err != nil {
		t.Fatal(err)
	}
	if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "copy\u2028e1", Properties: map[string]any{"Of": "e1"}}); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	a.step = func(job, step string) error {
		if step == "read" {
			attempts.Add(1)
		}
		return nil
	}
	out, err := a.ArchiveEntity(b.ctx, b.job("Sales", "e1"))
	if err == nil || !errors.Is(err, errs.ErrInvalidInput) || errors.Is(err, errRestart) || !permanent(err) {
		t.Fatalf("move: %v %v; want a permanent ErrInvalidInput", out, err)
	}
	if strings.Contains(err.Error(), "changed") || !strings.Contains(err.Error(), "refuses the delete of a companion's copy") {
		t.Fatalf("the error does not say what happened: %v", err)
	}
	if n := attempts.Load(); n > 2 {
		t.Fatalf("the move ran %d attempts; want at most 2", n)
	}
	if _, err := b.current.Get(b.ctx, "Sales", "e1"); err != nil {
		t.Fatalf("the entity is no longer in the source: %v", err)
	}
}

// In a range move, the entity whose companion copy the store refuses to delete in every
// delete transaction (404 while the companion finds it there) is left in the source and
// reported (RangeReport.Skipped) after two attempts, and the rest of its batch moves;
// the job does not restart until its retries end.
func TestArchiveRangeCompanionDeleteRefusedTwiceSkipsTheEntity(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	a, err := New(b.clients, &Options{Retry: fastRetry(), Companions: map[string][]Companion{b.current.Name(): {lineSeparatorCopy{b.current}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, rk := range []string{"e1", "e2", "e3"} {
		if err := b.current.Insert(b.ctx, employee("Sales", rk, 30)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "copy\u2028e2", Properties: map[string]any{"Of": "e2"}}); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	a.step = func(job, step string) error {
		if step == "read" {
			attempts.Add(1)
		}
		return nil
	}
	rep, err := a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", RowKeyFrom: "e", RowKeyTo: "f", TargetTable: b.archive.Name()})
	if err != nil || rep.Moved != 2 || len(rep.Skipped) != 1 || rep.Skipped[0] != (RangeKey{"Sales", "e2"}) {
		t.Fatalf("%+v %v; want e1 and e3 moved, e2 skipped", rep, err)
	}
	if n := attempts.Load(); n > 3 {
		t.Fatalf("the batch ran %d attempts; want at most 3", n)
	}
	if _, err := b.current.Get(b.ctx, "Sales", "e2"); err != nil {
		t.Fatalf("e2 is no longer in the source: %v", err)
	}
}
