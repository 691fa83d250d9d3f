package largeentity_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Faults injected between the SDK and the service at each step of a write.
func TestFaults(t *testing.T) {
	t.Parallel()
	oldPic, newPic := photo(30, 40<<10), photo(31, 45<<10)

	t.Run("lost response of the entity insert", func(t *testing.T) {
		t.Parallel()
		b := setup(t, true, nil)
		b.tproxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsInsertEntity, Times: 1, Action: faultproxy.DropAfterForward()})
		if err := b.store.Insert(b.ctx, employee("000123", newPic)); err != nil {
			t.Fatal(err)
		}
		if b.tproxy.Fired("lost") != 1 {
			t.Fatal("the fault did not fire")
		}
		mustEqual(t, "photo", b.consistent("Sales", "000123"), newPic)
		if n := len(b.blobs()); n != 1 {
			t.Fatalf("%d blobs", n)
		}
	})

	t.Run("upload busy once", func(t *testing.T) {
		t.Parallel()
		b := setup(t, true, nil)
		b.bproxy.AddRule(faultproxy.Rule{Name: "busy", Match: faultproxy.IsPutBlob, Times: 1, Action: faultproxy.Respond(503, "ServerBusy")})
		if err := b.store.Insert(b.ctx, employee("000123", newPic)); err != nil {
			t.Fatal(err)
		}
		if b.bproxy.Fired("busy") != 1 {
			t.Fatal("the fault did not fire")
		}
		mustEqual(t, "photo", b.consistent("Sales", "000123"), newPic)
	})

	t.Run("old blob delete keeps failing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, true, nil)
		if err := b.store.Insert(b.ctx, employee("000123", oldPic)); err != nil {
			t.Fatal(err)
		}
		remove := b.bproxy.AddRule(faultproxy.Rule{Name: "busy", Match: faultproxy.MethodIs("DELETE"), Action: faultproxy.Respond(503, "ServerBusy")})
		if err := b.store.Upsert(b.ctx, employee("000123", newPic)); err != nil {
			t.Fatalf("a failed clean-up failed the write: %v", err)
		}
		remove()
		mustEqual(t, "photo", b.consistent("Sales", "000123"), newPic)
		if n := len(b.blobs()); n != 2 {
			t.Fatalf("%d blobs, want the new one and the orphan", n)
		}
		if rep := b.sweepAll(); rep.Deleted != 1 || rep.Referenced != 1 {
			t.Fatalf("sweep: %+v", rep)
		}
	})

	t.Run("entity write keeps failing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, true, nil)
		if err := b.store.Insert(b.ctx, employee("000123", oldPic)); err != nil {
			t.Fatal(err)
		}
		e, err := b.store.Get(b.ctx, "Sales", "000123", nil)
		if err != nil {
			t.Fatal(err)
		}
		e.Photo = largeentity.NewBlob(newPic, "image/jpeg")
		remove := b.tproxy.AddRule(faultproxy.Rule{Name: "busy", Match: faultproxy.IsEntityWrite, Action: faultproxy.Respond(503, "ServerBusy")})
		if err := b.store.Update(b.ctx, &e); !errors.Is(err, repo.ErrTransient) {
			t.Fatalf("update: %v, want ErrTransient", err)
		}
		remove()
		// Ambiguous failure: the new blob is kept (the entity might reference it) and swept.
		mustEqual(t, "photo", b.consistent("Sales", "000123"), oldPic)
		if rep := b.sweepAll(); rep.Deleted != 1 || rep.Referenced != 1 {
			t.Fatalf("sweep: %+v", rep)
		}
		// The caller's value is as it was: retrying the update stores the new photo.
		if !e.Photo.Pending() {
			t.Fatal("the failed update left the part marked stored")
		}
		if err := b.store.Update(b.ctx, &e); err != nil {
			t.Fatal(err)
		}
		mustEqual(t, "photo", b.consistent("Sales", "000123"), newPic)
		if n := len(b.blobs()); n != 1 {
			t.Fatalf("%d blobs", n)
		}
	})

	// Another writer changes the entity between our read and our conditional write.
	for _, upsert := range []bool{false, true} {
		name := map[bool]string{false: "update loses a race", true: "upsert retries a lost race"}[upsert]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false, nil)
			if err := b.store.Insert(b.ctx, employee("000123", oldPic)); err != nil {
				t.Fatal(err)
			}
			otherPic := photo(32, 33<<10)
			raced := false
			largeentity.OnStep(b.store, func(step string) error {
				if step != largeentity.StepUploaded || raced {
					return nil
				}
				raced = true
				return b.store.Upsert(b.ctx, employee("000123", otherPic))
			})
			e := employee("000123", newPic)
			var err error
			if upsert {
				err = b.store.Upsert(b.ctx, e)
			} else {
				cur, _ := b.store.Get(b.ctx, "Sales", "000123", nil)
				e.ETag = cur.ETag
				err = b.store.Update(b.ctx, e)
			}
			largeentity.OnStep(b.store, nil)
			want := newPic
			if !upsert {
				want = otherPic
				if !errors.Is(err, repo.ErrPreconditionFailed) {
					t.Fatalf("update that lost a race: %v", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			mustEqual(t, "photo", b.consistent("Sales", "000123"), want)
			if all, ref := b.blobs(), b.referenced("Sales", "000123"); !equalStrings(all, ref) {
				t.Fatalf("container holds %q, the entity references %q", all, ref)
			}
		})
	}
}
