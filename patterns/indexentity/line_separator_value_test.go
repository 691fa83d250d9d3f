package indexentity

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Delete removes the entity and its index entity (its last id) in one transaction: an
// entity key and a value holding U+2028 or U+2029 must leave neither behind and delete
// no other row in their place.
func TestSamePartitionDeleteRemovesEntityAndIndexWhenKeyAndValueHaveLineSeparator(t *testing.T) {
	t.Parallel()
	for _, sep := range testbed.LineSeparators {
		t.Run(sep.Name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			ix := b.samePartition(nil)
			b.Bystander("", "Sales")
			e := emp("Sales", "000"+sep.Rune+"123", "Jo"+sep.Rune+"nes")
			if err := ix.Insert(b.Ctx, e); err != nil {
				t.Fatal(err)
			}
			if err := ix.Delete(b.Ctx, "Sales", e.EmployeeID, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := b.emps.Get(b.Ctx, "Sales", e.EmployeeID); !errors.Is(err, repo.ErrNotFound) {
				t.Fatalf("the entity is still there: %v", err)
			}
			if ids, err := ix.IDs(b.Ctx, "Sales", e.LastName); err != nil || len(ids) != 0 {
				t.Fatalf("IDs after the delete: %q, %v", ids, err)
			}
			b.MustHaveBystander("", "Sales")
		})
	}
}

// Removing the last key of a value deletes its index entity in the list's transaction:
// a value holding U+2028 or U+2029 (it is in the index partition's key, which Azurite
// cannot read from a $batch delete) must leave no index entity behind. (Page 0 has the
// empty RowKey itself: there is no other row for a misaddressed delete to reach.)
func TestTableStoreRemoveDeletesEmptyPageWhenValueHasLineSeparator(t *testing.T) {
	t.Parallel()
	for _, sep := range testbed.LineSeparators {
		t.Run(sep.Name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			s := b.tableStore(0)
			value := "Jo" + sep.Rune + "nes"
			k := Key{PartitionKey: "Sales", RowKey: "000123"}
			if err := s.Add(b.Ctx, value, k); err != nil {
				t.Fatal(err)
			}
			if err := s.Remove(b.Ctx, value, k); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Keys(b.Ctx, value); err != nil || len(got) != 0 {
				t.Fatalf("Keys after the remove: %v, %v", got, err)
			}
			rows, err := s.Table().Collect(b.Ctx, repo.Query{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 0 {
				t.Fatalf("%d rows left in the store's table, want none", len(rows))
			}
		})
	}
}

// An archive move deletes the emptied index entity of the entity's value in the
// transaction that deletes the entity, conditional on the page as read (Removal): a value
// holding U+2028 or U+2029 must never make the store delete another row, and the move
// either removes the entity with its entry or leaves both (package consistency starts
// over when the store refuses that delete, which Azurite does).
func TestArchiveSamePartitionNeverDeletesAnotherRowWhenValueHasLineSeparator(t *testing.T) {
	t.Parallel()
	for _, sep := range testbed.LineSeparators {
		t.Run(sep.Name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			ix := b.samePartition(nil)
			b.Bystander("", "Sales")
			e := emp("Sales", "000001", "Jo"+sep.Rune+"nes")
			if err := ix.Insert(b.Ctx, e); err != nil {
				t.Fatal(err)
			}
			a, target := b.Archiver(ix)
			_, err := a.ArchiveEntity(b.Ctx, b.ArchiveJob(target, "Sales", e.EmployeeID))
			t.Logf("ArchiveEntity: %v", err)
			b.MustHaveBystander("", "Sales")
			_, gerr := b.emps.Get(b.Ctx, "Sales", e.EmployeeID)
			ids, lerr := ix.IDs(b.Ctx, "Sales", e.LastName)
			if lerr != nil {
				t.Fatal(lerr)
			}
			switch {
			case err == nil && errors.Is(gerr, repo.ErrNotFound) && len(ids) == 0:
				b.MustBeArchived(target, "Sales", e.EmployeeID)
			case err != nil && gerr == nil && len(ids) == 1:
				// Refused as a whole: the entity and its entry are both still there.
			default:
				t.Fatalf("half a move: ArchiveEntity %v, get %v, ids %q", err, gerr, ids)
			}
		})
	}
}
