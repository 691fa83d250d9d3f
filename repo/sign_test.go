package repo_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// OwnedDoc is a tenant's document: the owner and the blind index are plaintext (a reader
// filters on them) and signed, the body is encrypted.
type OwnedDoc struct {
	Tenant string    `table:",pk"`
	ID     string    `table:",rk"`
	Owner  string    `table:"Owner,sign"`
	Quota  int64     `table:"Quota,sign"`
	Due    time.Time `table:"Due,sign"`
	Score  float64   `table:"Score,sign"`
	Title  string    `table:"Title"`
	Body   string    `table:"Body,encrypt"`
	ETag   string    `table:",etag"`
}

// Signed plaintext against the real service: values come back in the service's spelling
// (Int64 as an annotated string, DateTime with 7 digits, a whole double) and still verify;
// a signed property changed or removed in place, or the whole entity copied to another
// table, fails with ErrTampered.
func TestSignedPlaintextOnTheService(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ctx := b.ctx
	kek := newKEK(t, "kek-1")
	x := &codec.Encryption{Key: kek, Table: b.name}
	docs := table[OwnedDoc](t, b, &repo.Options{Encryption: x})
	in := &OwnedDoc{Tenant: "tenant-a", ID: "doc-1", Owner: "alice", Quota: 1 << 40,
		Due: time.Date(2030, 1, 2, 3, 4, 5, 600, time.UTC), Score: 5, Title: "Q3", Body: "secret plans"}
	if err := docs.Insert(ctx, in); err != nil {
		t.Fatal(err)
	}
	got, err := docs.Get(ctx, "tenant-a", "doc-1")
	if err != nil || got.Owner != "alice" || got.Quota != 1<<40 || got.Score != 5 || got.Body != "secret plans" {
		t.Fatalf("read back: %+v, %v", got, err)
	}
	raw := testenv.TableService(t).NewClient(b.name)
	stored, err := raw.GetEntity(ctx, "tenant-a", "doc-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	merge := func(props map[string]any) {
		t.Helper()
		props["PartitionKey"], props["RowKey"] = "tenant-a", "doc-1"
		body, _ := json.Marshal(props)
		if _, err := raw.UpdateEntity(ctx, body, &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge}); err != nil {
			t.Fatal(err)
		}
	}
	restore := func() {
		t.Helper()
		if _, err := raw.UpdateEntity(ctx, stored.Value, &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		if _, err := docs.Get(ctx, "tenant-a", "doc-1"); err != nil {
			t.Fatalf("restored entity: %v", err)
		}
	}

	// An unsigned property may change.
	merge(map[string]any{"Title": "Q4"})
	if got, err := docs.Get(ctx, "tenant-a", "doc-1"); err != nil || got.Title != "Q4" {
		t.Fatalf("unsigned change: %+v, %v", got, err)
	}
	for name, attack := range map[string]func(){
		"owner changed": func() { merge(map[string]any{"Owner": "mallory"}) },
		"quota changed": func() { merge(map[string]any{"Quota": "1099511627777", "Quota@odata.type": "Edm.Int64"}) },
		"owner removed": func() {
			var props map[string]any
			_ = json.Unmarshal(stored.Value, &props)
			delete(props, "Owner")
			for k := range props {
				if len(k) > 6 && k[:6] == "odata." {
					delete(props, k)
				}
			}
			body, _ := json.Marshal(props)
			if _, err := raw.UpdateEntity(ctx, body, &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
				t.Fatal(err)
			}
		},
	} {
		attack()
		if _, err := docs.Get(ctx, "tenant-a", "doc-1"); !errors.Is(err, codec.ErrTampered) {
			t.Errorf("%s: %v, want ErrTampered", name, err)
		}
		restore()
	}

	// The whole entity copied to another table, as someone with access to both could.
	other := testenv.TableName(t)
	if _, err := testenv.TableService(t).CreateTable(ctx, other, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = testenv.TableService(t).DeleteTable(ctx, other, nil) })
	var props map[string]any
	_ = json.Unmarshal(stored.Value, &props)
	for k := range props {
		if len(k) > 6 && k[:6] == "odata." {
			delete(props, k)
		}
	}
	body, _ := json.Marshal(props)
	if _, err := testenv.TableService(t).NewClient(other).AddEntity(ctx, body, nil); err != nil {
		t.Fatal(err)
	}
	moved, err := repo.New[OwnedDoc](b.clients.Tables, other, &repo.Options{Encryption: &codec.Encryption{Key: kek, Table: other}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := moved.Get(ctx, "tenant-a", "doc-1"); !errors.Is(err, codec.ErrTampered) {
		t.Fatalf("entity moved to another table: %v, want ErrTampered", err)
	}

	// A re-encrypting rotation keeps the signatures and the binding.
	next := newKEK(t, "kek-2")
	rot := table[OwnedDoc](t, b, &repo.Options{Encryption: &codec.Encryption{Key: next, Resolver: keyring(t, kek, next), Table: b.name}})
	if res, err := rot.RotateKeys(ctx, &repo.RotateOptions{Reencrypt: true}); err != nil || res.Reencrypted != 1 {
		t.Fatalf("rotation: %+v, %v", res, err)
	}
	if got, err := rot.Get(ctx, "tenant-a", "doc-1"); err != nil || got.Owner != "alice" || got.Body != "secret plans" {
		t.Fatalf("after rotation: %+v, %v", got, err)
	}
	merge(map[string]any{"Owner": "mallory"})
	if _, err := rot.Get(ctx, "tenant-a", "doc-1"); !errors.Is(err, codec.ErrTampered) {
		t.Fatalf("owner changed after rotation: %v, want ErrTampered", err)
	}
}
