package largeentity_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// forge rewrites the stored Photo reference of an entity behind the Store's back, as a
// tenant who may write his own row could.
func (b *bed) forge(t *testing.T, pk, rk, name string, size int64, sum string) {
	t.Helper()
	ref := fmt.Sprintf(`{"v":1,"name":%q,"size":%d,"sha256":%q,"type":"image/jpeg"}`, name, size, sum)
	body, err := json.Marshal(map[string]any{"PartitionKey": pk, "RowKey": rk, "Photo": ref})
	if err != nil {
		t.Fatal(err)
	}
	client := testenv.TableService(t).NewClient(b.tableNm)
	if _, err := client.UpdateEntity(b.ctx, body, &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge}); err != nil {
		t.Fatal(err)
	}
}

func sha(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// Defect 1 of the security review: a tenant edits his own row's reference to name a blob
// he must not reach. Every Store operation refuses it as tampered, and no request reaches
// the named blob (the blob proxy's request log says so); the blob survives.
func TestForgedReferenceIsRefusedWithoutTouchingTheBlob(t *testing.T) {
	t.Parallel()
	b := setup(t, true, nil)
	victimPic, ownPic := photo(40, 40<<10), photo(41, 40<<10)
	victim := employee("000999", victimPic)
	if err := b.store.Insert(b.ctx, victim); err != nil {
		t.Fatal(err)
	}
	own := employee("000123", ownPic)
	if err := b.store.Insert(b.ctx, own); err != nil {
		t.Fatal(err)
	}
	foreign := []byte(`{"secret":"other application's configuration"}`)
	if _, err := b.raw.NewBlockBlobClient("other-app/config.json").UploadBuffer(b.ctx, foreign, nil); err != nil {
		t.Fatal(err)
	}
	stamp := own.Photo.Name()[len(own.Photo.Name())-41:] // "20060102T150405Z." + 24 hex

	targets := map[string]struct {
		name string
		data []byte
	}{
		"another application's blob":   {"other-app/config.json", foreign},
		"another entity's blob":        {victim.Photo.Name(), victimPic},
		"path escape from own dir":     {strings.TrimSuffix(own.Photo.Name(), stamp) + "../../other-app/config.json", foreign},
		"own dir, another property":    {strings.Replace(own.Photo.Name(), "/Photo.", "/Badge.", 1), ownPic},
		"own part, suffix appended":    {own.Photo.Name() + "/x", ownPic},
		"own part, uppercase hex":      {strings.ToUpper(own.Photo.Name()[:len(own.Photo.Name())-24]) + strings.ToUpper(own.Photo.Name()[len(own.Photo.Name())-24:]), ownPic},
		"another store's prefix":       {"other" + own.Photo.Name(), ownPic},
		"own directory, forged suffix": {strings.TrimSuffix(own.Photo.Name(), stamp) + "x", ownPic},
	}
	for what, tc := range targets {
		t.Run(what, func(t *testing.T) {
			b.forge(t, "Sales", "000123", tc.name, int64(len(tc.data)), sha(tc.data))
			b.bproxy.Reset()
			plain, err := b.store.Table().Get(b.ctx, "Sales", "000123")
			if err != nil {
				t.Fatal(err)
			}
			ops := map[string]func() error{
				"lazy get": func() error { _, err := b.store.Get(b.ctx, "Sales", "000123", nil); return err },
				"eager get": func() error {
					_, err := b.store.Get(b.ctx, "Sales", "000123", &largeentity.GetOptions{Eager: true})
					return err
				},
				"load": func() error { v := plain; return b.store.Load(b.ctx, &v) },
				"update": func() error {
					v := plain
					v.Name = "Don Hall II"
					return b.store.Update(b.ctx, &v)
				},
				"update with new photo": func() error {
					v := plain
					v.Photo = largeentity.NewBlob(photo(42, 40<<10), "image/jpeg")
					return b.store.Update(b.ctx, &v)
				},
				"upsert": func() error { return b.store.Upsert(b.ctx, employee("000123", nil)) },
				"delete": func() error { return b.store.Delete(b.ctx, "Sales", "000123", "") },
			}
			for op, f := range ops {
				if err := f(); !errors.Is(err, largeentity.ErrTampered) {
					t.Errorf("%s: %v, want ErrTampered", op, err)
				}
			}
			// A Blob decoded by a plain table read was not vouched for by the Store.
			if _, err := b.store.Open(b.ctx, plain.Photo); !errors.Is(err, repo.ErrInvalidInput) {
				t.Errorf("open of an unchecked Blob: %v, want ErrInvalidInput", err)
			}
			if n := b.bproxy.Count(); n != 0 {
				t.Errorf("%d blob requests were sent, want none: %+v", n, b.bproxy.Requests())
			}
			if _, err := b.raw.NewBlobClient(tc.name).GetProperties(b.ctx, nil); err != nil && tc.name == "other-app/config.json" {
				t.Errorf("the foreign blob is gone: %v", err)
			}
		})
	}
	// The entities still exist; the victim is intact.
	mustEqual(t, "victim's photo", b.consistent("Sales", "000999"), victimPic)
	if _, err := b.store.Table().Get(b.ctx, "Sales", "000123"); err != nil {
		t.Fatalf("the tampered entity: %v", err)
	}
}

// Defect 6: a stored reference with a huge size must not crash or exhaust the reader. An
// absurd size is refused as tampered; a large one fails on Content-Length before any
// buffer is allocated or any reader is returned.
func TestHugeSizeInReference(t *testing.T) {
	t.Parallel()
	b := setup(t, true, nil)
	pic := photo(43, 40<<10)
	e := employee("000123", pic)
	if err := b.store.Insert(b.ctx, e); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		size int64
		want error
	}{
		{1 << 50, largeentity.ErrTampered},
		{1 << 62, largeentity.ErrTampered},
		{1 << 40, largeentity.ErrContentMismatch},
		{int64(len(pic)) + 1, largeentity.ErrContentMismatch},
	} {
		t.Run(fmt.Sprint(tc.size), func(t *testing.T) {
			b.forge(t, "Sales", "000123", e.Photo.Name(), tc.size, sha(pic))
			if _, err := b.store.Get(b.ctx, "Sales", "000123", &largeentity.GetOptions{Eager: true}); !errors.Is(err, tc.want) {
				t.Fatalf("eager get: %v, want %v", err, tc.want)
			}
			if tc.want != largeentity.ErrContentMismatch {
				return
			}
			lazy, err := b.store.Get(b.ctx, "Sales", "000123", nil)
			if err != nil {
				t.Fatal(err)
			}
			rc, err := b.store.Open(b.ctx, lazy.Photo)
			if !errors.Is(err, largeentity.ErrContentMismatch) {
				if rc != nil {
					rc.Close()
				}
				t.Fatalf("open: %v, want ErrContentMismatch before a reader is returned", err)
			}
		})
	}
}

// Issue 10, item 9: an Update whose entity write landed but whose answer was lost, followed
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

// Blob metadata is untrusted too: a blob whose metadata was edited to name another entity
// (one that does not reference it, or does not exist) is not judged by that entity, so
// the sweeper never deletes a blob that its own entity references.
func TestSweeperIgnoresMetadataNamingAnotherEntity(t *testing.T) {
	t.Parallel()
	b := setup(t, false, nil)
	pic := photo(48, 40<<10)
	e := employee("000123", pic)
	if err := b.store.Insert(b.ctx, e); err != nil {
		t.Fatal(err)
	}
	forged := map[string]*string{
		"partitionkey": ptr(base64.RawURLEncoding.EncodeToString([]byte("Sales"))),
		"rowkey":       ptr(base64.RawURLEncoding.EncodeToString([]byte("000999"))),
		"property":     ptr(base64.RawURLEncoding.EncodeToString([]byte("Photo"))),
	}
	if _, err := b.raw.NewBlobClient(e.Photo.Name()).SetMetadata(b.ctx, forged, nil); err != nil {
		t.Fatal(err)
	}
	rep := b.sweepAll()
	if rep.Deleted != 0 || rep.Foreign != 1 {
		t.Fatalf("sweep: %+v, want the blob counted foreign and kept", rep)
	}
	mustEqual(t, "photo", b.consistent("Sales", "000123"), pic)
}

func ptr(s string) *string { return &s }

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
	if err := b.store.Delete(b.ctx, "Sales", "000123", ""); !errors.Is(err, repo.ErrOutcomeUnknown) {
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

// Open streams only Blobs that this Store vouched for: not one read through another Store
// of the same container, even one whose prefix extends this Store's.
func TestOpenRefusesAnotherStoresBlob(t *testing.T) {
	t.Parallel()
	b := setup(t, false, nil)
	other, err := largeentity.New(b.store.Table(), testenv.BlobService(t), b.cname, &largeentity.Options{Prefix: b.store.Prefix() + "/nested", Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Insert(b.ctx, employee("000123", photo(50, 40<<10))); err != nil {
		t.Fatal(err)
	}
	e, err := other.Get(b.ctx, "Sales", "000123", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rc, err := other.Open(b.ctx, e.Photo); err != nil {
		t.Fatalf("open through its own Store: %v", err)
	} else {
		rc.Close()
	}
	if _, err := b.store.Open(b.ctx, e.Photo); !errors.Is(err, largeentity.ErrTampered) {
		t.Fatalf("open through another Store: %v, want ErrTampered", err)
	}
}
