package wideentity_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/wideentity"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks Delete's "errs.ErrPreconditionFailed (opts.ETag given and the entity written
// since)" with SetProperty, which merges one property and keeps the revision:
// a Delete given the revision read before a SetProperty must not remove the property set
// since (the entity was written since the read).
func TestConditionalDeleteRefusedAfterASetPropertySinceTheRead(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	s := store(t, b, nil)
	if err := s.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: year(1)}); err != nil {
		t.Fatal(err)
	}
	old, err := s.Get(b.Ctx, "P", "E")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetProperty(b.Ctx, "P", "E", "D200", int32(999)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(b.Ctx, "P", "E", &repo.DeleteOptions{ETag: old.ETag()}); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("delete given the revision read before a SetProperty: %v, want ErrPreconditionFailed", err)
	}
	checkWhole(t, b, "P", "E", 2)
}
