package largeentity_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

func TestInsertGetLoadOpen(t *testing.T) {
	t.Parallel()
	b := setup(t, false, nil)
	pic := photo(1, 200<<10)
	e := employee("000123", pic)
	if err := b.store.Insert(b.ctx, e); err != nil {
		t.Fatal(err)
	}
	if e.ETag == "" || e.Photo.Pending() || e.Photo.Name() == "" || !e.Badge.Inline() {
		t.Fatalf("after Insert: etag %q, photo pending %v name %q, badge inline %v", e.ETag, e.Photo.Pending(), e.Photo.Name(), e.Badge.Inline())
	}
	if got := b.blobs(); len(got) != 1 || got[0] != e.Photo.Name() {
		t.Fatalf("container holds %q, want only the photo %q", got, e.Photo.Name())
	}

	// Lazy: the entity only; the inline part comes with it.
	lazy, err := b.store.Get(b.ctx, "Sales", "000123", nil)
	if err != nil {
		t.Fatal(err)
	}
	if lazy.Photo.Loaded() || lazy.Photo.Size() != int64(len(pic)) || lazy.Photo.SHA256() != e.Photo.SHA256() || lazy.Photo.ContentType() != "image/jpeg" {
		t.Fatalf("lazy photo: loaded %v size %d sha %s type %q", lazy.Photo.Loaded(), lazy.Photo.Size(), lazy.Photo.SHA256(), lazy.Photo.ContentType())
	}
	mustEqual(t, "inline badge", lazy.Badge.Bytes(), []byte("badge 000123"))

	// On demand: Open streams and verifies; Load fills the part.
	rc, err := b.store.Open(b.ctx, lazy.Photo)
	if err != nil {
		t.Fatal(err)
	}
	streamed, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "streamed photo", streamed, pic)
	if err := b.store.Load(b.ctx, &lazy); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "loaded photo", lazy.Photo.Bytes(), pic)

	eager, err := b.store.Get(b.ctx, "Sales", "000123", &largeentity.GetOptions{Eager: true})
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "eager photo", eager.Photo.Bytes(), pic)

	// The blob carries the metadata that ties it to its entity.
	props, err := b.raw.NewBlobClient(e.Photo.Name()).GetProperties(b.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(props.Metadata) < 2 || props.ContentType == nil || *props.ContentType != "image/jpeg" {
		t.Fatalf("blob metadata %v, content type %v", props.Metadata, props.ContentType)
	}

	if err := b.store.Insert(b.ctx, employee("000123", photo(2, 100<<10))); !errors.Is(err, repo.ErrAlreadyExists) {
		t.Fatalf("second insert: %v, want ErrAlreadyExists", err)
	}
	if got := b.blobs(); len(got) != 1 {
		t.Fatalf("a refused insert left its blob: %q", got)
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
		err := b.store.Delete(b.ctx, "Sales", "000123", "")
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

// The race the grace period exists for: a sweep between a write's upload and its entity
// write must not delete the new blob.
func TestSweepSparesInFlightWrite(t *testing.T) {
	t.Parallel()
	b := setup(t, false, nil)
	pic := photo(12, 50<<10)
	var swept largeentity.SweepReport
	largeentity.OnStep(b.store, func(step string) error {
		if step != largeentity.StepUploaded {
			return nil
		}
		var err error
		swept, err = b.store.Sweep(b.ctx) // the entity does not reference the blob yet
		return err
	})
	if err := b.store.Insert(b.ctx, employee("000999", pic)); err != nil {
		t.Fatal(err)
	}
	if swept.Scanned != 1 || swept.Young != 1 || swept.Deleted != 0 {
		t.Fatalf("sweep during the write: %+v", swept)
	}
	mustEqual(t, "photo", b.consistent("Sales", "000999"), pic)
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
	if err := b.store.Delete(b.ctx, "Sales", "000123", `W/"datetime'2000-01-01T00%3A00%3A00Z'"`); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("delete with a stale ETag: %v", err)
	}
	if err := b.store.Delete(b.ctx, "Sales", "000123", e.ETag); err != nil {
		t.Fatal(err)
	}
	if n := len(b.blobs()); n != 0 {
		t.Fatalf("%d blobs left after the delete", n)
	}
	if err := b.store.Delete(b.ctx, "Sales", "000123", ""); !errors.Is(err, repo.ErrNotFound) {
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

func TestSweepLeavesForeignAndReferencedBlobs(t *testing.T) {
	t.Parallel()
	b := setup(t, false, nil)
	e := employee("000123", photo(17, 30<<10))
	if err := b.store.Insert(b.ctx, e); err != nil {
		t.Fatal(err)
	}
	foreign := b.store.Prefix() + "/notes/readme.txt"
	if _, err := b.raw.NewBlockBlobClient(foreign).UploadBuffer(b.ctx, []byte("not ours"), nil); err != nil {
		t.Fatal(err)
	}
	outside := "elsewhere/file"
	if _, err := b.raw.NewBlockBlobClient(outside).UploadBuffer(b.ctx, []byte("other prefix"), nil); err != nil {
		t.Fatal(err)
	}
	rep := b.sweepAll()
	if rep.Scanned != 2 || rep.Referenced != 1 || rep.Foreign != 1 || rep.Deleted != 0 {
		t.Fatalf("sweep: %+v", rep)
	}
	// An entity-scoped sweep after a crash removes that entity's orphans only.
	largeentity.CrashAfter(b.store, largeentity.StepUploaded)
	e2 := *e
	e2.Photo = largeentity.NewBlob(photo(18, 30<<10), "image/jpeg")
	if err := b.store.Update(b.ctx, &e2); !errors.Is(err, largeentity.ErrCrash) {
		t.Fatal(err)
	}
	largeentity.CrashAfter(b.store, "")
	largeentity.ShiftClock(b.store, 2*largeentity.DefaultSweepGrace)
	rep, err := b.store.SweepEntity(b.ctx, "Sales", "000123")
	if err != nil || rep.Scanned != 2 || rep.Deleted != 1 || rep.Referenced != 1 {
		t.Fatalf("entity sweep: %+v, %v", rep, err)
	}
	if got := b.blobs(); len(got) != 3 {
		t.Fatalf("blobs after the sweeps: %q", got)
	}
}

// Input that breaks a limit is refused before any request, table or blob.
func TestInvalidInputSendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, true, &largeentity.Options{MaxPartBytes: 64 << 10})
	stored := employee("000123", photo(19, 30<<10))
	if err := b.store.Insert(b.ctx, stored); err != nil {
		t.Fatal(err)
	}
	lazy, err := b.store.Get(b.ctx, "Sales", "000123", nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]func() error{
		"part over MaxPartBytes": func() error { return b.store.Insert(b.ctx, employee("1", photo(20, 65<<10))) },
		"bad content type": func() error {
			e := employee("2", photo(21, 100))
			e.Photo = largeentity.NewBlob([]byte("x"), "image/jpeg\r\nX-Evil: 1")
			return b.store.Upsert(b.ctx, e)
		},
		"bad key": func() error { return b.store.Insert(b.ctx, employee("a/b", photo(22, 100))) },
		"entity too large": func() error {
			e := employee("3", photo(23, 100))
			e.Name = strings.Repeat("x", 40000)
			return b.store.Insert(b.ctx, e)
		},
		"reference without content": func() error {
			c := lazy
			c.EmployeeID = "4"
			return b.store.Insert(b.ctx, &c)
		},
		"nil entity":  func() error { return b.store.Update(b.ctx, nil) },
		"sweep keys":  func() error { _, err := b.store.SweepEntity(b.ctx, "", "x"); return err },
		"open zero":   func() error { _, err := b.store.Open(b.ctx, largeentity.Blob{}); return err },
		"open unsent": func() error { _, err := b.store.Open(b.ctx, largeentity.NewBlob(nil, "")); return err },
	}
	tmark, bmark := b.tproxy.Count(), b.bproxy.Count()
	for name, f := range cases {
		if err := f(); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	if n, m := b.tproxy.Count()-tmark, b.bproxy.Count()-bmark; n != 0 || m != 0 {
		t.Fatalf("%d table and %d blob requests sent for refused input", n, m)
	}
	// A plain repo.Table cannot store new content either: it would reference no blob.
	if err := b.store.Table().Insert(b.ctx, employee("5", photo(24, 100))); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("plain table insert of new content: %v", err)
	}
	if n := b.tproxy.Count() - tmark; n != 0 {
		t.Fatalf("%d requests sent by the plain table", n)
	}
	// A loaded part can be copied to a new entity: it gets its own blob.
	if err := b.store.Load(b.ctx, &lazy); err != nil {
		t.Fatal(err)
	}
	lazy.EmployeeID, lazy.ETag = "000124", ""
	if err := b.store.Insert(b.ctx, &lazy); err != nil {
		t.Fatal(err)
	}
	if lazy.Photo.Name() == stored.Photo.Name() {
		t.Fatal("the copy shares the original's blob")
	}
}

func TestNewRefusesBadSetup(t *testing.T) {
	t.Parallel()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	type NoETag struct {
		PK    string           `table:",pk"`
		RK    string           `table:",rk"`
		Photo largeentity.Blob `table:"Photo"`
	}
	type NoBlob struct {
		PK   string `table:",pk"`
		RK   string `table:",rk"`
		ETag string `table:",etag"`
	}
	type PtrBlob struct {
		PK    string            `table:",pk"`
		RK    string            `table:",rk"`
		ETag  string            `table:",etag"`
		Photo *largeentity.Blob `table:"Photo"`
	}
	emps, _ := repo.New[Employee](clients.Tables, "Employees", nil)
	noETag, _ := repo.New[NoETag](clients.Tables, "Employees", nil)
	noBlob, _ := repo.New[NoBlob](clients.Tables, "Employees", nil)
	ptrBlob, _ := repo.New[PtrBlob](clients.Tables, "Employees", nil)
	checks := map[string]error{
		"container name":   second(largeentity.New(emps, clients.Blobs, "Bad_Name", nil)),
		"grace too short":  second(largeentity.New(emps, clients.Blobs, "photos", &largeentity.Options{MaxWriteTime: 10, SweepGrace: 15})),
		"inline too large": second(largeentity.New(emps, clients.Blobs, "photos", &largeentity.Options{InlineLimit: largeentity.MaxInlineLimit + 1})),
		"prefix":           second(largeentity.New(emps, clients.Blobs, "photos", &largeentity.Options{Prefix: "a/"})),
		"no etag":          second(largeentity.New(noETag, clients.Blobs, "photos", nil)),
		"no blob":          second(largeentity.New(noBlob, clients.Blobs, "photos", nil)),
		"*Blob":            second(largeentity.New(ptrBlob, clients.Blobs, "photos", nil)),
		"nil table":        second(largeentity.New[Employee](nil, clients.Blobs, "photos", nil)),
	}
	for name, err := range checks {
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	if _, err := largeentity.New(emps, clients.Blobs, "photos", nil); err != nil {
		t.Fatal(err)
	}
}

func second[A any](_ A, err error) error { return err }

func equalStrings(a, b []string) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}
