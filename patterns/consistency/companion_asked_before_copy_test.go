package consistency

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The companions answer before anything is written, on every attempt of a move, not
// only the first: an attempt whose delete failed because the source changed (412)
// starts over from fresh reads, and the newer version must be put to the companions
// before its copy replaces the one written by the first attempt. Here the newer
// version is one the companion refuses (a forged row): the restart must stop at the
// refusal with a permanent ErrInvalidInput, the archive copy still the first
// attempt's (the refused version is never copied), and the entity and its copy still
// in the source.
func TestCompanionRefusalOnARestartWritesNothingNew(t *testing.T) {
	t.Parallel()
	b := setupCompanion(t, nil)
	b.insertWithCopy(t, "000001")
	var changed atomic.Bool
	b.a.seams.step = func(job, step string) error {
		if job != "archive-entity" || step != "copied" || !changed.CompareAndSwap(false, true) {
			return nil
		}
		// Between the first attempt's copy and its delete: a newer version, one the
		// companion refuses.
		e, err := b.current.Get(context.Background(), "Sales", "000001")
		if err != nil {
			return err
		}
		e.Properties["Forged"] = true
		e.Properties["Age"] = int32(31)
		return b.current.Update(context.Background(), &e, nil)
	}
	_, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", "000001"))
	if !changed.Load() {
		t.Fatal("the move never reached its delete")
	}
	if !errors.Is(err, errs.ErrInvalidInput) || !permanent(err) {
		t.Fatalf("the restart met a version the companion refuses: %v, want a permanent ErrInvalidInput", err)
	}
	if n := b.sib.removals.Load(); n != 2 {
		t.Fatalf("the companion was asked %d times, want 2 (once per attempt)", n)
	}
	cp, err := b.archive.Get(b.ctx, "Sales", "000001")
	if err != nil {
		t.Fatalf("the first attempt's copy: %v", err)
	}
	if cp.Properties["Forged"] != nil || cp.Properties["Age"] != int32(30) {
		t.Fatalf("the refused version was copied: %v", cp.Properties)
	}
	src, err := b.current.Get(b.ctx, "Sales", "000001")
	if err != nil || src.Properties["Forged"] != true {
		t.Fatalf("the source after the refusal: %v %v", src.Properties, err)
	}
	if cp.Properties[SourceETagProperty] == src.ETag {
		t.Fatalf("the copy records the refused version %s", src.ETag)
	}
	if _, err := b.current.Get(b.ctx, "Sales", "copy-000001"); errors.Is(err, repo.ErrNotFound) || err != nil {
		t.Fatalf("the companion's copy after the refusal (it must stay with its entity): %v", err)
	}
}
