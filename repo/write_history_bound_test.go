package repo_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Options.WriteHistory promises that a retry recognises its write "as long as fewer than
// WriteHistory writes landed after it": with WriteHistory-1 later writes the retried update
// is success, with WriteHistory later writes it is ErrOutcomeUnknown.
func TestWriteHistoryRecognisesAWriteUntilWriteHistoryWritesLandedAfterIt(t *testing.T) {
	t.Parallel()
	for _, keep := range []int{2, repo.DefaultWriteHistory} {
		for _, later := range []int{keep - 1, keep} {
			t.Run(fmt.Sprintf("keep%d/later%d", keep, later), func(t *testing.T) {
				t.Parallel()
				b := setup(t, true)
				other := table[Counter](t, b, &repo.Options{TrackWrites: true, WriteHistory: keep})
				tbl := table[Counter](t, b, &repo.Options{TrackWrites: true, WriteHistory: keep, Logger: onRetry(func() {
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
				got, gerr := tbl.Get(b.ctx, "c", "1")
				if gerr != nil || got.N != 100+int64(later) {
					t.Fatalf("stored N = %d, %v; want %d (our write, then %d others)", got.N, gerr, 100+later, later)
				}
				switch {
				case later < keep && err != nil:
					t.Fatalf("%d later writes with WriteHistory %d: %v, want nil (the id is still in the history)", later, keep, err)
				case later >= keep && !errors.Is(err, repo.ErrOutcomeUnknown):
					t.Fatalf("%d later writes with WriteHistory %d: %v, want ErrOutcomeUnknown", later, keep, err)
				}
			})
		}
	}
}

// WriteHistory 2: two writes after ours push our id out. The answer must be "unknown",
// never nil and never a refusal.
func TestWriteHistoryOverflowIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	other := table[Counter](t, b, &repo.Options{TrackWrites: true, WriteHistory: 2})
	tbl := table[Counter](t, b, &repo.Options{TrackWrites: true, WriteHistory: 2, Logger: onRetry(func() {
		for range 3 {
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
	a, _ := tbl.Get(b.ctx, "c", "1")
	b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropAfterForward()})
	a.N++
	err := tbl.Update(b.ctx, &a, nil)
	if !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("overflowed history: %v, want ErrOutcomeUnknown", err)
	}
	// Same, but our write was dropped before the service: never nil.
	a, _ = tbl.Get(b.ctx, "c", "1")
	tbl2 := table[Counter](t, b, &repo.Options{TrackWrites: true, WriteHistory: 2, Logger: onRetry(func() {
		for range 3 {
			c, _ := other.Get(b.ctx, "c", "1")
			c.N++
			_ = other.Update(b.ctx, &c, nil)
		}
	})})
	a, _ = tbl2.Get(b.ctx, "c", "1")
	b.proxy.AddRule(faultproxy.Rule{Name: "drop", Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropBeforeForward()})
	a.N++
	if err := tbl2.Update(b.ctx, &a, nil); err == nil || errors.Is(err, repo.ErrOutcomeUnknown) == false && !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("dropped write, overflowed history: %v", err)
	}
}
