package repo_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
)

// An unconditional Delete whose first attempt was dropped before it reached the service
// (not applied) while another writer deleted the entity: the retry meets 404. Two
// consumers that claim an item by deleting it (nil = mine, ErrNotFound = somebody else's)
// must not both get nil. Delete never returns nil for a write that did not happen: the
// answer is ErrOutcomeUnknown (or ErrNotFound).
func TestDeleteNeverReturnsNilForAnotherWritersDelete(t *testing.T) {
	t.Parallel()
	for _, track := range []bool{false, true} {
		b := setup(t, true)
		other := table[Counter](t, b, nil)
		tbl := table[Counter](t, b, &repo.Options{TrackWrites: track, Logger: onRetry(func() {
			if err := other.Delete(b.ctx, "c", "1", nil); err != nil {
				t.Error(err)
			}
		})})
		mustInsertCounter(t, tbl, 5)
		b.proxy.AddRule(faultproxy.Rule{Name: "drop", Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropBeforeForward()})
		err := tbl.Delete(b.ctx, "c", "1", nil)
		if b.proxy.Fired("drop") != 1 {
			t.Fatal("the drop did not fire")
		}
		if err == nil {
			t.Errorf("track=%v: Delete returned nil, but the entity was deleted by another writer and this delete never reached the service", track)
		} else if !errors.Is(err, repo.ErrOutcomeUnknown) && !errors.Is(err, repo.ErrNotFound) {
			t.Errorf("track=%v: %v", track, err)
		}
	}
}
