package secondaryindex_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks Inter.Delete's "With opts.ETag set ... the delete is conditional on it:
// errs.ErrPreconditionFailed if the entity changed since": another writer moves the
// employee's email between the read and the delete; the delete is refused, the entity is
// kept, and once the worker settled its index holds the new email only. Then a delete
// whose first attempt never reached the service, with another writer's update landing
// before the retry: the retry carries the now stale ETag and must not delete the newer
// version (nil would tell the caller its delete happened). Last, a conditional delete
// that landed but whose response was lost answers nil or errs.ErrOutcomeUnknown (never a
// precondition failure for its own write) and the copies go.
func TestInterConditionalDeleteNeverDeletesANewerVersion(t *testing.T) {
	t.Parallel()
	b, x, w := interStaff(t, true) // Jun Jones (1, jun@contoso.com), Amy Smith (2)
	read, err := x.Get(b.Ctx, "Sales", "000001")
	if err != nil {
		t.Fatal(err)
	}
	moved := read
	moved.Email = "moved.mailbox@contoso.com"
	if err := x.Update(b.Ctx, &moved); err != nil {
		t.Fatal(err)
	}
	if err := x.Delete(b.Ctx, "Sales", "000001", &repo.DeleteOptions{ETag: read.ETag}); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("delete with the ETag read before an update: %v, want ErrPreconditionFailed", err)
	}
	b.drainAfterSafety(t, w)
	if got, err := x.Lookup(b.Ctx, "Sales", "email", "moved.mailbox@contoso.com"); err != nil || got.RowKey != "000001" {
		t.Fatalf("the kept employee by its new email: %+v %v", got, err)
	}
	if _, err := x.Lookup(b.Ctx, "Sales", "email", "jun@contoso.com"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("the old email after the refused delete: %v", err)
	}
	mustClean(t, b.Ctx, x, 2, "Sales")

	// The first attempt is dropped before the service; the retry is held while the
	// entity changes.
	isDelete := faultproxy.All(faultproxy.IsEntityWrite, faultproxy.MethodIs(http.MethodDelete))
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "dropped delete", Times: 1, Match: isDelete, Action: faultproxy.DropBeforeForward()})
	ps := b.Proxies.Table.PauseAt("retried delete", isDelete, 1)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	go func() { done <- x.Delete(b.Ctx, "Sales", "000001", &repo.DeleteOptions{ETag: moved.ETag}) }()
	testbed.WaitHeld(t, ps)
	again := moved
	again.Email = "again.mailbox@contoso.com"
	if err := x.Update(b.Ctx, &again); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	err = <-done
	if b.Proxies.Table.Fired("dropped delete") != 1 {
		t.Fatal("the first attempt was not dropped: the test proves nothing")
	}
	if err == nil || (!errors.Is(err, repo.ErrPreconditionFailed) && !errors.Is(err, repo.ErrOutcomeUnknown)) {
		t.Fatalf("retried delete with an ETag made stale in between: %v, want ErrPreconditionFailed or ErrOutcomeUnknown", err)
	}
	b.drainAfterSafety(t, w)
	if got, err := x.Lookup(b.Ctx, "Sales", "email", "again.mailbox@contoso.com"); err != nil || got.RowKey != "000001" {
		t.Fatalf("the newer version after a stale retried delete (%v): %+v %v", err, got, err)
	}
	mustClean(t, b.Ctx, x, 2, "Sales")

	// A conditional delete that landed, its response lost.
	cur, err := x.Get(b.Ctx, "Sales", "000001")
	if err != nil {
		t.Fatal(err)
	}
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "lost delete response", Times: 1, Match: isDelete, Action: faultproxy.DropAfterForward()})
	err = x.Delete(b.Ctx, "Sales", "000001", &repo.DeleteOptions{ETag: cur.ETag})
	if b.Proxies.Table.Fired("lost delete response") != 1 {
		t.Fatal("the response was not lost: the test proves nothing")
	}
	if err != nil && !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("conditional delete whose response was lost: %v, want nil or ErrOutcomeUnknown", err)
	}
	b.drainAfterSafety(t, w)
	if _, err := x.Get(b.Ctx, "Sales", "000001"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("after the delete landed: %v", err)
	}
	if _, err := x.Lookup(b.Ctx, "Sales", "email", "again.mailbox@contoso.com"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("the deleted employee's email after the worker settled: %v", err)
	}
	mustClean(t, b.Ctx, x, 1, "Sales")
}
