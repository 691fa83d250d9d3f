package compoundkey_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// DeleteAction is a delete without an ETag: in a transaction, a key part holding U+2028
// or U+2029 must never make the store delete another row (Azurite addresses the row
// with the empty RowKey), and repo.SubmitOrSplit must still delete the review.
func TestDeleteActionNeverDeletesAnotherRowWhenPartHasLineSeparator(t *testing.T) {
	t.Parallel()
	for _, sep := range testbed.LineSeparators {
		t.Run(sep.Name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := t.Context()
			b.Bystander("", "Sales")
			year := "20" + sep.Rune + "14"
			if err := b.reviews.Insert(ctx, b.review(t, "000155", year, 5)); err != nil {
				t.Fatal(err)
			}
			del, err := b.reviews.DeleteAction("Sales", []string{"000155", year}, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = repo.Submit(ctx, del)
			b.MustHaveBystander("", "Sales")
			if err != nil && !errors.Is(err, repo.ErrDeleteMisaddressed) {
				t.Fatalf("Submit: %v", err)
			}
			if _, err := repo.SubmitOrSplit(ctx, del); err != nil && !errors.Is(err, repo.ErrNotFound) {
				t.Fatalf("SubmitOrSplit: %v", err)
			}
			if _, err := b.reviews.Get(ctx, "Sales", []string{"000155", year}); !errors.Is(err, repo.ErrNotFound) {
				t.Fatalf("the review is still there: %v", err)
			}
			b.MustHaveBystander("", "Sales")
		})
	}
}
