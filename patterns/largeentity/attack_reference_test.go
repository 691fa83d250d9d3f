package largeentity_test

import (
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

// Attack: path and encoding tricks on a stored reference, each aimed at the victim's blob
// or out of the tenant's own directory. Every Store operation must refuse with ErrTampered
// (or a malformed-reference error) and send no blob request; the victim's blob survives.
func TestAttackReferencePathTricks(t *testing.T) {
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
				"delete": func() error { return b.store.Delete(b.ctx, "Sales", "000123", "") },
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

// Attack: sizes at the edges: 0 and negative, the largest accepted, math.MaxInt64 (size+1
// overflows), on the tenant's own blob. Nothing may panic, allocate the size, or succeed.
func TestAttackReferenceSizes(t *testing.T) {
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
