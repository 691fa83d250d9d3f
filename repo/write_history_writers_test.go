package repo_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Options.WriteHistory's bound holds for the history every writer of the entity keeps:
// a later writer with a smaller WriteHistory cuts the stored history to its own, so a
// retry recognises its write while fewer than the smallest WriteHistory of the writers
// that followed it landed after it, and answers ErrOutcomeUnknown (never a refusal or a
// wrong success) once its id was cut.
func TestWriteHistoryIsTheSmallestAmongTheWritersThatFollow(t *testing.T) {
	t.Parallel()
	const ours, theirs = repo.DefaultWriteHistory, 2
	for _, later := range []int{theirs - 1, theirs} {
		t.Run(fmt.Sprintf("later%d", later), func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			other := table[Counter](t, b, &repo.Options{TrackWrites: true, WriteHistory: theirs})
			tbl := table[Counter](t, b, &repo.Options{TrackWrites: true, WriteHistory: ours, Logger: onRetry(func() {
				for range later {
					c, err := other.Get(b.ctx, "c", "1")
					if err == nil {
						c.N++
						err = other.Update(b.ctx, &c, nil)
					}
					if err != nil {
						t.Error(err)
					}
				}
			})})
			mustInsertCounter(t, tbl, 5)
			a, err := tbl.Get(b.ctx, "c", "1")
			if err != nil {
				t.Fatal(err)
			}
			b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropAfterForward()})
			a.N = 100
			err = tbl.Update(b.ctx, &a, nil)
			if got, gerr := tbl.Get(b.ctx, "c", "1"); gerr != nil || got.N != 100+int64(later) {
				t.Fatalf("stored N = %d, %v; want %d", got.N, gerr, 100+later)
			}
			switch {
			case later < theirs && err != nil:
				t.Fatalf("%d later writes by a writer keeping %d: %v, want nil", later, theirs, err)
			case later >= theirs && !errors.Is(err, repo.ErrOutcomeUnknown):
				t.Fatalf("%d later writes by a writer keeping %d: %v, want ErrOutcomeUnknown", later, theirs, err)
			}
		})
	}
}
