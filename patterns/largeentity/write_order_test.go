package largeentity_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Faults injected between the SDK and the service at each step of a write.
func TestFaultAtAnyStepLeavesTheEntityConsistent(t *testing.T) {
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

func TestUpdateReplacesAndDeletesOldBlob(t *testing.T) {
	t.Parallel()
	b := setup(t, false, nil)
	e := employee("000152", photo(3, 100<<10))
	if err := b.store.Insert(b.ctx, e); err != nil {
		t.Fatal(err)
	}
	first := e.Photo.Name()
	read, err := b.store.Get(b.ctx, "Sales", "000152", nil)
	if err != nil {
		t.Fatal(err)
	}

	// A property change keeps the photo's blob.
	read.Name = "Jun Cao"
	if err := b.store.Update(b.ctx, &read); err != nil {
		t.Fatal(err)
	}
	if read.Photo.Name() != first || b.consistent("Sales", "000152") == nil {
		t.Fatalf("a name change moved the photo: %q -> %q", first, read.Photo.Name())
	}

	// A new photo: new blob, old one deleted.
	newPic := photo(4, 150<<10)
	read.Photo = largeentity.NewBlob(newPic, "image/png")
	if err := b.store.Update(b.ctx, &read); err != nil {
		t.Fatal(err)
	}
	if read.Photo.Name() == first || read.Photo.Name() == "" {
		t.Fatalf("new photo stored under %q (old %q)", read.Photo.Name(), first)
	}
	if got := b.blobs(); len(got) != 1 || got[0] != read.Photo.Name() {
		t.Fatalf("container holds %q, want only %q", got, read.Photo.Name())
	}
	mustEqual(t, "updated photo", b.consistent("Sales", "000152"), newPic)

	// A stale copy is refused before it uploads anything, and changes nothing.
	stale := *e
	stale.Photo = largeentity.NewBlob(photo(5, 120<<10), "image/png")
	if err := b.store.Update(b.ctx, &stale); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("stale update: %v, want ErrPreconditionFailed", err)
	}
	if !stale.Photo.Pending() || stale.ETag != e.ETag {
		t.Fatal("a failed update changed the caller's value")
	}
	if got := b.blobs(); len(got) != 1 {
		t.Fatalf("a refused update left blobs: %q", got)
	}

	// A zero part removes the content and its blob.
	read.Photo = largeentity.Blob{}
	if err := b.store.Update(b.ctx, &read); err != nil {
		t.Fatal(err)
	}
	if got := b.blobs(); len(got) != 0 {
		t.Fatalf("removed photo left blobs: %q", got)
	}
	if err := b.store.Update(b.ctx, employee("nobody", nil)); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("update of a missing entity: %v", err)
	}
}

// A part without new content keeps what the entity holds now, never a reference read
// earlier whose blob another writer has replaced and deleted.
func TestUpsertKeepsCurrentPart(t *testing.T) {
	t.Parallel()
	b := setup(t, false, nil)
	if err := b.store.Upsert(b.ctx, employee("000155", photo(6, 90<<10))); err != nil {
		t.Fatal(err)
	}
	old, err := b.store.Get(b.ctx, "Sales", "000155", nil)
	if err != nil {
		t.Fatal(err)
	}
	newer := employee("000155", photo(7, 80<<10))
	if err := b.store.Upsert(b.ctx, newer); err != nil {
		t.Fatal(err)
	}
	old.Name = "Ken Kwok"
	if err := b.store.Upsert(b.ctx, &old); err != nil {
		t.Fatal(err)
	}
	if old.Photo.Name() != newer.Photo.Name() {
		t.Fatalf("the stale reference %q was written back instead of the current %q", old.Photo.Name(), newer.Photo.Name())
	}
	mustEqual(t, "photo after upserts", b.consistent("Sales", "000155"), newer.Photo.Bytes())
	got, _ := b.store.Table().Get(b.ctx, "Sales", "000155")
	if got.Name != "Ken Kwok" {
		t.Fatalf("name %q", got.Name)
	}
	if n := len(b.blobs()); n != 1 {
		t.Fatalf("%d blobs after upserts, want 1", n)
	}
}

// A stop between any two steps of a write leaves the entity pointing only at complete blobs
// (nothing dangles) holding the old or the new content (nothing lost); the orphans are
// swept, and rerunning the write finishes it.
func TestCrashBetweenSteps(t *testing.T) {
	t.Parallel()
	oldPic, newPic := photo(10, 70<<10), photo(11, 60<<10)
	type op struct {
		name  string
		step  string
		run   func(b *bed) error
		after []byte // photo after the crash (nil: the entity is gone)
		final []byte // photo after the rerun
	}
	update := func(b *bed) error {
		e, err := b.store.Get(b.ctx, "Sales", "000123", nil)
		if err != nil {
			return err
		}
		e.Photo = largeentity.NewBlob(newPic, "image/jpeg")
		return b.store.Update(b.ctx, &e)
	}
	upsert := func(b *bed) error { return b.store.Upsert(b.ctx, employee("000123", newPic)) }
	del := func(b *bed) error {
		err := b.store.Delete(b.ctx, "Sales", "000123", nil)
		if errors.Is(err, repo.ErrNotFound) {
			return nil // the rerun of a delete that got through
		}
		return err
	}
	ops := []op{
		{"update", largeentity.StepUploaded, update, oldPic, newPic},
		{"update", largeentity.StepWritten, update, newPic, newPic},
		{"upsert", largeentity.StepUploaded, upsert, oldPic, newPic},
		{"upsert", largeentity.StepWritten, upsert, newPic, newPic},
		{"delete", largeentity.StepWritten, del, nil, nil},
	}
	for _, o := range ops {
		t.Run(o.name+"/after-"+o.step, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false, nil)
			if err := b.store.Insert(b.ctx, employee("000123", oldPic)); err != nil {
				t.Fatal(err)
			}
			largeentity.CrashAfter(b.store, o.step)
			if err := o.run(b); !errors.Is(err, largeentity.ErrCrash) {
				t.Fatalf("crash hook did not fire: %v", err)
			}
			largeentity.CrashAfter(b.store, "")
			mustEqual(t, "photo after the crash", b.consistent("Sales", "000123"), o.after)
			if len(b.blobs()) <= len(b.referenced("Sales", "000123")) {
				t.Fatalf("the crash left no orphan: blobs %q", b.blobs())
			}

			// A sweep within the grace period deletes nothing: the write might still go on.
			rep, err := b.store.Sweep(b.ctx)
			if err != nil || rep.Deleted != 0 || rep.Young == 0 {
				t.Fatalf("young sweep: %+v, %v", rep, err)
			}
			rep = b.sweepAll()
			if rep.Deleted == 0 || rep.Deleted+rep.Referenced != rep.Scanned {
				t.Fatalf("sweep after the grace period: %+v", rep)
			}
			mustEqual(t, "photo after the sweep", b.consistent("Sales", "000123"), o.after)
			if got, want := b.blobs(), b.referenced("Sales", "000123"); !equalStrings(got, want) {
				t.Fatalf("after the sweep the container holds %q, the entity references %q", got, want)
			}

			// Rerunning the write reaches the final state and leaves no orphan.
			if err := o.run(b); err != nil {
				t.Fatal(err)
			}
			mustEqual(t, "photo after the rerun", b.consistent("Sales", "000123"), o.final)
			if got, want := b.blobs(), b.referenced("Sales", "000123"); !equalStrings(got, want) {
				t.Fatalf("after the rerun the container holds %q, the entity references %q", got, want)
			}
		})
	}
}

// A write that cannot send its entity write within MaxWriteTime gives up and never writes a
// reference to a blob the sweeper may already judge.
func TestWriteDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t, false, &largeentity.Options{MaxWriteTime: 1, SweepGrace: 2})
	err := b.store.Insert(b.ctx, employee("000777", photo(13, 40<<10)))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("insert past its deadline: %v", err)
	}
	if _, err := b.store.Table().Get(b.ctx, "Sales", "000777"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("the entity was written after the deadline: %v", err)
	}
	if n := len(b.blobs()); n != 1 {
		t.Fatalf("%d blobs, want the one orphan", n)
	}
	if rep := b.sweepAll(); rep.Deleted != 1 {
		t.Fatalf("sweep: %+v", rep)
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	b := setup(t, false, nil)
	e := employee("000123", photo(14, 30<<10))
	if err := b.store.Insert(b.ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := b.store.Delete(b.ctx, "Sales", "000123", &repo.DeleteOptions{ETag: `W/"datetime'2000-01-01T00%3A00%3A00Z'"`}); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("delete with a stale ETag: %v", err)
	}
	if err := b.store.Delete(b.ctx, "Sales", "000123", &repo.DeleteOptions{ETag: e.ETag}); err != nil {
		t.Fatal(err)
	}
	if n := len(b.blobs()); n != 0 {
		t.Fatalf("%d blobs left after the delete", n)
	}
	if err := b.store.Delete(b.ctx, "Sales", "000123", nil); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestStaleLoadAndDangling(t *testing.T) {
	t.Parallel()
	b := setup(t, false, nil)
	if err := b.store.Insert(b.ctx, employee("000123", photo(15, 30<<10))); err != nil {
		t.Fatal(err)
	}
	lazy, err := b.store.Get(b.ctx, "Sales", "000123", nil)
	if err != nil {
		t.Fatal(err)
	}
	newPic := photo(16, 31<<10)
	if err := b.store.Upsert(b.ctx, employee("000123", newPic)); err != nil {
		t.Fatal(err)
	}
	// The old blob is gone: Load tells a stale read from a dangling reference.
	if err := b.store.Load(b.ctx, &lazy); !errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, largeentity.ErrDangling) {
		t.Fatalf("load of a stale value: %v", err)
	}
	if _, err := b.store.Open(b.ctx, lazy.Photo); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("open of a replaced blob: %v", err)
	}

	cur, err := b.store.Get(b.ctx, "Sales", "000123", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Content changed outside the Store is detected by Load and by Open.
	if _, err := b.raw.NewBlockBlobClient(cur.Photo.Name()).UploadBuffer(b.ctx, bytes.Repeat([]byte{1}, len(newPic)), (*blockblob.UploadBufferOptions)(nil)); err != nil {
		t.Fatal(err)
	}
	tampered := cur
	if err := b.store.Load(b.ctx, &tampered); !errors.Is(err, largeentity.ErrContentMismatch) {
		t.Fatalf("load of tampered content: %v", err)
	}
	rc, err := b.store.Open(b.ctx, cur.Photo)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(rc)
	rc.Close()
	if !errors.Is(err, largeentity.ErrContentMismatch) {
		t.Fatalf("open of tampered content: %v", err)
	}
	// A blob deleted outside the Store: the entity did not change, so it dangles.
	if _, err := b.raw.NewBlobClient(cur.Photo.Name()).Delete(b.ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.store.Load(b.ctx, &cur); !errors.Is(err, largeentity.ErrDangling) || !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("load of a dangling reference: %v", err)
	}
}

// Concurrent upserts of one entity lose no write and leave exactly the winner's blob.
func TestConcurrentUpserts(t *testing.T) {
	t.Parallel()
	b := setup(t, false, nil)
	const writers = 6
	pics := make([][]byte, writers)
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		pics[i] = photo(uint64(100+i), 20<<10+i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 3 && errs[i] == nil; round++ {
				errs[i] = b.store.Upsert(b.ctx, employee("000123", pics[i]))
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	got := b.consistent("Sales", "000123")
	found := false
	for _, p := range pics {
		found = found || bytes.Equal(got, p)
	}
	if !found {
		t.Fatal("the stored photo is none of the writers'")
	}
	if all, want := b.blobs(), b.referenced("Sales", "000123"); !equalStrings(all, want) {
		t.Fatalf("container holds %q, the entity references %q", all, want)
	}
}
