package secondaryindex_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks "duplicated, reordered and replayed messages all reconcile the current state"
// and the write protocol's "each step safe to interrupt" with SafetyDelay -1, at the
// primary write's lost response: the Delete lands, its response is lost, the retry meets
// 404 and repo answers ErrOutcomeUnknown. write() returns before Notify, so nothing is
// enqueued; the caller's natural retry of Delete answers ErrNotFound, again before
// Notify. The deleted employee's copy stays in the index with nothing queued to remove it.
func TestAttackInterDeleteLostResponseNoSafetyLeavesCopy(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, queue := b.queue(t)
	x := b.inter(t, q, -1, byEmail)
	w := b.worker(t, queue, x)
	e := iemp(901, "Lu", "Lost", "lu@contoso.com")
	if err := x.Insert(b.ctx, e); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	b.expect(t, "email_Sales", [2]string{"lu@contoso.com", e.RowKey})

	b.proxies.Table.AddRule(faultproxy.Rule{Name: "lost delete response", Times: 1, Action: faultproxy.DropAfterForward(),
		Match: faultproxy.All(faultproxy.IsEntityWrite, faultproxy.MethodIs(http.MethodDelete))})
	err := x.Delete(b.ctx, "Sales", e.RowKey, nil)
	t.Logf("Delete after a lost response: %v", err)
	if err != nil {
		// The caller retries, as any caller of a failed delete would.
		err2 := x.Delete(b.ctx, "Sales", e.RowKey, nil)
		t.Logf("retried Delete: %v", err2)
	}
	drain(t, w)
	if _, gerr := x.Primary().Get(b.ctx, "Sales", e.RowKey); !errors.Is(gerr, repo.ErrNotFound) {
		t.Fatalf("primary: %v, want deleted", gerr)
	}
	if v, lerr := x.Lookup(b.ctx, "Sales", "email", "lu@contoso.com", nil); lerr == nil {
		t.Fatalf("the deleted employee %s is still found by email, with no message queued (Delete: %v)", v.RowKey, err)
	}
}
