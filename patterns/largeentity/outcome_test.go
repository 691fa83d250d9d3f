package largeentity_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// isEntityDelete selects a delete of one entity.
var isEntityDelete = faultproxy.All(faultproxy.IsEntityWrite, faultproxy.MethodIs("DELETE"))

// A Delete whose entity delete landed with its response lost, then another writer's Insert
// of the same keys before the retry: the re-read finds an entity, which proves nothing (it
// is the other writer's), so Delete must not delete it nor its blob; the answer is
// ErrOutcomeUnknown, and the re-inserted entity stays readable with its blobs.
func TestDeleteNeverDeletesAnEntityReinsertedByAnotherWriter(t *testing.T) {
	t.Parallel()
	b := setup(t, true, nil)
	direct, err := repo.New[Employee](b.Direct.Tables, b.Table, b.RepoOptions())
	if err != nil {
		t.Fatal(err)
	}
	other, err := largeentity.New(direct, b.Direct.Blobs, b.cname, &largeentity.Options{Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.store.Insert(b.ctx, employee("000123", photo(40, 40<<10))); err != nil {
		t.Fatal(err)
	}
	b.tproxy.AddRule(faultproxy.Rule{Name: "lost", Match: isEntityDelete, Times: 1, Action: faultproxy.DropAfterForward()})
	retried := b.tproxy.PauseAt("held retry", isEntityDelete, 1)
	t.Cleanup(retried.Release)
	done := make(chan error, 1)
	go func() { done <- b.store.Delete(b.ctx, "Sales", "000123", nil) }()
	if err := retried.Wait(b.ctx); err != nil {
		t.Fatal(err)
	}
	again := photo(41, 40<<10)
	if err := other.Insert(b.ctx, employee("000123", again)); err != nil {
		t.Fatalf("the other writer's insert after the landed delete: %v", err)
	}
	retried.Release()
	if err := <-done; !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Errorf("delete: %v, want ErrOutcomeUnknown", err)
	}
	mustEqual(t, "the other writer's photo", b.consistent("Sales", "000123"), again)
}

// An Update whose entity write landed but whose answer was lost, followed
// by another writer who keeps the new photo, meets 412 on its retry. It must not delete the
// blob the committed entity points to.
func TestUpdateLostResponseThenOtherWriterKeepsPhoto(t *testing.T) {
	t.Parallel()
	b := setup(t, true, nil)
	oldPic, newPic := photo(44, 40<<10), photo(45, 45<<10)
	if err := b.store.Insert(b.ctx, employee("000123", oldPic)); err != nil {
		t.Fatal(err)
	}
	// The other writer talks to the service directly.
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	otherTable, err := repo.New[Employee](clients.Tables, b.tableNm, &repo.Options{Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	other, err := largeentity.New(otherTable, clients.Blobs, b.cname, &largeentity.Options{Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int32
	var otherErr error
	b.tproxy.AddRule(faultproxy.Rule{Name: "lost", Times: 1, Action: faultproxy.DropAfterForward(),
		Match: func(r *http.Request) bool {
			if !faultproxy.IsEntityWrite(r) {
				return false
			}
			switch writes.Add(1) {
			case 1:
				return true // the first attempt lands; its answer is lost
			case 2:
				// Before the retry: another writer renames the employee, keeping the photo.
				cur, err := other.Get(context.Background(), "Sales", "000123", nil)
				if err == nil {
					cur.Name = "Donald Hall"
					err = other.Update(context.Background(), &cur)
				}
				otherErr = err
			}
			return false
		}})
	e, err := b.store.Get(b.ctx, "Sales", "000123", nil)
	if err != nil {
		t.Fatal(err)
	}
	e.Photo = largeentity.NewBlob(newPic, "image/jpeg")
	err = b.store.Update(b.ctx, &e)
	if b.tproxy.Fired("lost") != 1 || writes.Load() < 2 {
		t.Fatalf("the fault did not fire as planned: fired %d, writes %d", b.tproxy.Fired("lost"), writes.Load())
	}
	if otherErr != nil {
		t.Fatalf("other writer: %v", otherErr)
	}
	if !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("update: %v, want ErrOutcomeUnknown (the write landed, then the entity changed)", err)
	}
	mustEqual(t, "photo", b.consistent("Sales", "000123"), newPic)
	cur, err := b.store.Get(b.ctx, "Sales", "000123", nil)
	if err != nil || cur.Name != "Donald Hall" {
		t.Fatalf("entity: %+v, %v", cur, err)
	}
	// The old photo is an orphan for the sweeper; the new one is kept.
	if rep := b.sweepAll(); rep.Deleted != 1 || rep.Referenced != 1 {
		t.Fatalf("sweep: %+v", rep)
	}
	mustEqual(t, "photo after the sweep", b.consistent("Sales", "000123"), newPic)
}

// The new blob of an Update refused for good (another writer won before it wrote) is still
// deleted at once: the re-read shows that the entity does not reference it.
func TestRefusedUpdateDeletesItsNewBlob(t *testing.T) {
	t.Parallel()
	b := setup(t, true, nil)
	if err := b.store.Insert(b.ctx, employee("000123", photo(46, 40<<10))); err != nil {
		t.Fatal(err)
	}
	e, err := b.store.Get(b.ctx, "Sales", "000123", nil)
	if err != nil {
		t.Fatal(err)
	}
	b.tproxy.AddRule(faultproxy.Rule{Name: "refused", Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.Respond(412, "UpdateConditionNotSatisfied")})
	e.Photo = largeentity.NewBlob(photo(47, 40<<10), "image/jpeg")
	if err := b.store.Update(b.ctx, &e); !errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("update: %v, want a bare ErrPreconditionFailed", err)
	}
	if all, ref := b.blobs(), b.referenced("Sales", "000123"); !equalStrings(all, ref) {
		t.Fatalf("container holds %q, the entity references %q", all, ref)
	}
	if !bytes.Equal(e.Photo.Bytes(), photo(47, 40<<10)) || !e.Photo.Pending() {
		t.Fatal("the refused update did not restore the caller's value")
	}
}

// A Delete whose entity delete landed but whose answer was lost removes the blobs (the
// re-read finds the entity gone, so nothing references them) and answers ErrOutcomeUnknown:
// a gone entity does not prove that this call deleted it, as repo's Delete answers too.
func TestDeleteLostResponse(t *testing.T) {
	t.Parallel()
	b := setup(t, true, nil)
	if err := b.store.Insert(b.ctx, employee("000123", photo(49, 40<<10))); err != nil {
		t.Fatal(err)
	}
	b.tproxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.MethodIs("DELETE"), Times: 1, Action: faultproxy.DropAfterForward()})
	if err := b.store.Delete(b.ctx, "Sales", "000123", nil); !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("delete: %v, want ErrOutcomeUnknown", err)
	}
	if b.tproxy.Fired("lost") != 1 {
		t.Fatal("the fault did not fire")
	}
	if _, err := b.store.Table().Get(b.ctx, "Sales", "000123"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("entity after delete: %v", err)
	}
	if got := b.blobs(); len(got) != 0 {
		t.Fatalf("blobs left: %q", got)
	}
}
