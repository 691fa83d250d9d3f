package migrate

import (
	"errors"
	"net/http"
	"testing"

	"github.com/tablepatterns/tablepatterns/errs"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// TestUnconditionalDeleteWhoseAnswerIsLostNeverReportsNotFound: a Delete without an ETag
// before clean-up is sent If-Match the row read; the service applies it and its answer is
// lost, so the retry meets 404, its own success. The caller is never told the entity was
// not there (errs.ErrNotFound): the outcome is errs.ErrOutcomeUnknown, as a plain table's
// Delete reports it, and the entity is gone.
func TestUnconditionalDeleteWhoseAnswerIsLostNeverReportsNotFound(t *testing.T) {
	t.Parallel()
	for _, stage := range []Stage{DualWrite, CutOver} {
		t.Run(string(stage), func(t *testing.T) {
			t.Parallel()
			f := setup(t, false, true)
			keys, _ := f.planned(t, 6, 1)
			f.advanceTo(t, stage)
			f.settled(t)
			ctx, k := f.b.Ctx, keys[2]
			p := f.b.Proxy()
			p.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.All(faultproxy.MethodIs(http.MethodDelete), onTable(f.src.Name())),
				Times: 1, Action: faultproxy.DropAfterForward()})
			err := f.m.Delete(ctx, k[0], k[1], nil)
			if p.Fired("lost") != 1 {
				t.Fatal("the delete's answer was never lost: the attack did not happen")
			}
			if errors.Is(err, errs.ErrNotFound) || err != nil && !errors.Is(err, errs.ErrOutcomeUnknown) {
				t.Errorf("Delete whose answer was lost = %v, want nil or ErrOutcomeUnknown, never ErrNotFound", err)
			}
			if _, err := f.m.Get(ctx, k[0], k[1]); !errors.Is(err, errs.ErrNotFound) {
				t.Errorf("Get after the Delete = %v, want ErrNotFound", err)
			}
		})
	}
}
