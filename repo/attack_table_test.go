package repo_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// An insert lands, its response is lost, the table is deleted before the retry: the
// retry meets 404 TableNotFound. The write happened (and was then destroyed with its
// table); ErrNotFound is listed among the refusals that must not be returned for a write
// that happened.
func TestAttackInsertThenTableDeleted(t *testing.T) {
	t.Parallel()
	for _, track := range []bool{false, true} {
		b := setup(t, true)
		tbl := table[Counter](t, b, &repo.Options{TrackWrites: track, Logger: onRetry(func() {
			if _, err := testenv.TableService(t).DeleteTable(b.ctx, b.name, nil); err != nil {
				t.Error(err)
			}
		})})
		b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsInsertEntity, Times: 1, Action: faultproxy.DropAfterForward()})
		err := tbl.Insert(b.ctx, &Counter{PK: "c", RK: "1"})
		if !errors.Is(err, repo.ErrOutcomeUnknown) {
			t.Errorf("track=%v: insert that landed, table deleted before the retry: %v (ErrNotFound=%v), want ErrOutcomeUnknown", track, err, errors.Is(err, repo.ErrNotFound))
		}
	}
}
