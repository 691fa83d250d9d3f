package largeentity_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
	"github.com/tablepatterns/tablepatterns/repo"
)

// forgeRaw stores ref verbatim as the Photo property of an entity.
func (b *bed) forgeRaw(t *testing.T, pk, rk, ref string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"PartitionKey": pk, "RowKey": rk, "Photo": ref})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.TableService(t).NewClient(b.tableNm).UpdateEntity(b.ctx, body, &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge}); err != nil {
		t.Fatal(err)
	}
}

// Path and encoding tricks on a stored reference, each aimed at the victim's blob
// or out of the tenant's own directory. Every Store operation must refuse with ErrTampered
// (or a malformed-reference error) and send no blob request; the victim's blob survives.
func TestForgedReferencePathsAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, true, nil)
	victimPic, ownPic := photo(50, 40<<10), photo(51, 40<<10)
	victim := employee("000999", victimPic)
	own := employee("000123", ownPic)
	for _, e := range []*Employee{victim, own} {
		if err := b.store.Insert(b.ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	vn, on := victim.Photo.Name(), own.Photo.Name()
	ownDir := on[:strings.LastIndex(on, "/")+1]
	vDir := vn[:strings.LastIndex(vn, "/")+1]
	vBase := vn[strings.LastIndex(vn, "/")+1:]
	names := map[string]string{
		"dotdot into victim":         ownDir + "../" + strings.TrimPrefix(vn, b.store.Prefix()+"/"),
		"percent-encoded dotdot":     ownDir + "%2e%2e/" + strings.TrimPrefix(vn, b.store.Prefix()+"/"),
		"percent-encoded slash":      ownDir + "..%2f" + strings.TrimPrefix(vn, b.store.Prefix()+"/"),
		"fullwidth solidus":          strings.Replace(vn, "/", "\uff0f", -1),
		"division slash":             ownDir + "..\u2215" + vBase,
		"own name trailing slash":    on + "/",
		"own name trailing dot":      on + ".",
		"own dir dot segment":        ownDir + "./" + on[len(ownDir):],
		"own dir double slash":       strings.Replace(on, "/", "//", 1),
		"victim name, own property":  vDir + "Photo." + on[len(ownDir)+len("Photo."):],
		"prefix in other case":       strings.ToUpper(b.store.Prefix()) + on[len(b.store.Prefix()):],
		"NUL inside":                 on[:len(on)-1] + "\x00",
		"leading slash":              "/" + on,
		"own name, space":            " " + on,
		"own name, newline":          on + "\n",
		"own name, fullwidth digits": on[:len(on)-1] + "\uff10",
		"absolute URL":               "https://evil.example/" + on,
		"victim, encoded":            strings.ReplaceAll(vn, "/", "%2F"),
	}
	for what, name := range names {
		t.Run(what, func(t *testing.T) {
			b.forge(t, "Sales", "000123", name, int64(len(victimPic)), sha(victimPic))
			b.bproxy.Reset()
			ops := map[string]func() error{
				"eager get": func() error {
					_, err := b.store.Get(b.ctx, "Sales", "000123", &largeentity.GetOptions{Eager: true})
					return err
				},
				"update": func() error {
					v, err := b.store.Table().Get(b.ctx, "Sales", "000123")
					if err != nil {
						return err
					}
					v.Photo = largeentity.NewBlob(photo(52, 40<<10), "image/jpeg")
					return b.store.Update(b.ctx, &v)
				},
				"delete": func() error { return b.store.Delete(b.ctx, "Sales", "000123", nil) },
			}
			for op, f := range ops {
				err := f()
				if err == nil || errors.Is(err, repo.ErrNotFound) && !errors.Is(err, largeentity.ErrTampered) {
					t.Errorf("%s: %v, want ErrTampered", op, err)
				}
			}
			for _, r := range b.bproxy.Requests() {
				if !strings.Contains(r.Path, "/Photo.") || !strings.Contains(r.Path, ownDir[len(b.store.Prefix())+1:]) || r.Method != "PUT" {
					t.Errorf("blob request %s %s sent for a forged reference", r.Method, r.Path)
				}
			}
			if _, err := b.raw.NewBlobClient(vn).GetProperties(b.ctx, nil); err != nil {
				t.Fatalf("the victim's blob is gone: %v", err)
			}
		})
	}
}

// Sizes at the edges: 0 and negative, the largest accepted, math.MaxInt64 (size+1
// overflows), on the tenant's own blob. Nothing may panic, allocate the size, or succeed.
func TestForgedReferenceSizesAtTheEdgesAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, true, nil)
	pic := photo(60, 40<<10)
	e := employee("000123", pic)
	if err := b.store.Insert(b.ctx, e); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int64{0, -1, math.MinInt64, 50000 * 4000 << 20, 50000*4000<<20 + 1, math.MaxInt64, math.MaxInt64 - 1} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			ref := fmt.Sprintf(`{"v":1,"name":%q,"size":%d,"sha256":%q}`, e.Photo.Name(), size, sha(pic))
			b.forgeRaw(t, "Sales", "000123", ref)
			_, err := b.store.Get(b.ctx, "Sales", "000123", &largeentity.GetOptions{Eager: true})
			if err == nil {
				t.Fatalf("eager get with size %d succeeded", size)
			}
			lazy, err := b.store.Get(b.ctx, "Sales", "000123", nil)
			if err != nil {
				return // refused before any download: fine
			}
			rc, err := b.store.Open(b.ctx, lazy.Photo)
			if err == nil {
				rc.Close()
				t.Fatalf("open with size %d returned a reader", size)
			}
		})
	}
	// A size written as a float or a huge number is malformed, not a crash.
	for _, raw := range []string{"1e300", "18446744073709551616", "-0", "1.5"} {
		ref := fmt.Sprintf(`{"v":1,"name":%q,"size":%s,"sha256":%q}`, e.Photo.Name(), raw, sha(pic))
		b.forgeRaw(t, "Sales", "000123", ref)
		if _, err := b.store.Get(b.ctx, "Sales", "000123", &largeentity.GetOptions{Eager: true}); err == nil && raw != "-0" {
			t.Errorf("size %s: eager get succeeded", raw)
		}
	}
}

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

// A tenant edits his own row's reference to name a blob
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
				"delete": func() error { return b.store.Delete(b.ctx, "Sales", "000123", nil) },
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

// A stored reference with a huge size must not crash or exhaust the reader. An
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
