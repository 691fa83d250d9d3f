package codec_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
)

// signedDoc has plaintext properties signed together with its encrypted one: an owner id
// and a blind index column a reader filters on, which nobody may rewrite unnoticed.
type signedDoc struct {
	PK      string  `table:",pk"`
	RK      string  `table:",rk"`
	Owner   string  `table:"Owner,sign"`
	Level   int64   `table:"Level,sign"`
	Email   []byte  `table:"EmailIndex,sign,omitempty"`
	Note    *string `table:"Note,sign"`
	Title   string  `table:"Title"`
	Content string  `table:"Content,encrypt"`
}

// oldDoc is the same entity type before signing was adopted.
type oldDoc struct {
	PK      string `table:",pk"`
	RK      string `table:",rk"`
	Owner   string `table:"Owner"`
	Level   int64  `table:"Level"`
	Title   string `table:"Title"`
	Content string `table:"Content,encrypt"`
}

// projection reads some properties only; it decrypts, so it verifies what it maps.
type projection struct {
	PK      string `table:",pk"`
	RK      string `table:",rk"`
	Owner   string `table:"Owner"`
	Content string `table:"Content,encrypt"`
}

func newSignedDoc() *signedDoc {
	note := "draft"
	return &signedDoc{PK: "tenant-a", RK: "doc-1", Owner: "alice", Level: 1 << 40, Email: []byte{1, 2, 3}, Note: &note, Title: "Q3", Content: "secret plans"}
}

// rewrite decodes body as a dynamic entity, applies f, and encodes it again: what someone
// with write access to the row can do.
func rewrite(t *testing.T, body []byte, f func(e *codec.Entity)) []byte {
	t.Helper()
	e, err := codec.DecodeEntity(body)
	if err != nil {
		t.Fatal(err)
	}
	f(e)
	out, err := codec.EncodeEntity(e)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSignedPlaintext(t *testing.T) {
	t.Parallel()
	kek := localKey(t, "kek-1")
	x := &codec.Encryption{Key: kek, Table: "Documents"}
	sc := encrypting[signedDoc](t, x)
	body, err := sc.Encode(newSignedDoc())
	if err != nil {
		t.Fatal(err)
	}
	var got signedDoc
	if err := sc.Decode(body, &got); err != nil || got.Owner != "alice" || got.Level != 1<<40 || got.Content != "secret plans" || *got.Note != "draft" {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	// The table name is compared without case, like the service's.
	if err := encrypting[signedDoc](t, &codec.Encryption{Key: kek, Table: "documents"}).Decode(body, &got); err != nil {
		t.Fatalf("same table in other case: %v", err)
	}
	// Another spelling of the same value (an Int64 as a plain string, as other clients
	// store it) is the same value.
	if err := sc.Decode(rewrite(t, body, func(e *codec.Entity) { e.Properties["Level"] = "1099511627776" }), &got); err != nil || got.Level != 1<<40 {
		t.Fatalf("Int64 spelled as a string: %+v, %v", got, err)
	}
	// A plaintext property that is not signed may change.
	if err := sc.Decode(rewrite(t, body, func(e *codec.Entity) { e.Properties["Title"] = "Q4" }), &got); err != nil || got.Title != "Q4" {
		t.Fatalf("unsigned change: %+v, %v", got, err)
	}
	// A projection that does not map the signed properties reads; one that maps Owner
	// (unsigned in its type) still has it verified.
	pc := encrypting[projection](t, x)
	var p projection
	if err := pc.Decode(body, &p); err != nil || p.Owner != "alice" {
		t.Fatalf("projection: %+v, %v", p, err)
	}

	attacks := map[string]struct {
		body []byte
		x    *codec.Encryption
	}{
		"change the owner":           {rewrite(t, body, func(e *codec.Entity) { e.Properties["Owner"] = "mallory" }), x},
		"change an Int64":            {rewrite(t, body, func(e *codec.Entity) { e.Properties["Level"] = int64(1<<40 + 1) }), x},
		"change a binary":            {rewrite(t, body, func(e *codec.Entity) { e.Properties["EmailIndex"] = []byte{1, 2, 4} }), x},
		"remove the owner":           {rewrite(t, body, func(e *codec.Entity) { delete(e.Properties, "Owner") }), x},
		"remove an omitempty binary": {rewrite(t, body, func(e *codec.Entity) { delete(e.Properties, "EmailIndex") }), x},
		"remove a pointer":           {rewrite(t, body, func(e *codec.Entity) { delete(e.Properties, "Note") }), x},
		"move to another table":      {body, &codec.Encryption{Key: kek, Table: "Archive"}},
		"read without the table":     {body, &codec.Encryption{Key: kek}},
		"move to another entity":     {rewrite(t, body, func(e *codec.Entity) { e.RowKey = "doc-2" }), x},
	}
	for name, a := range attacks {
		var got signedDoc
		err := encrypting[signedDoc](t, a.x).Decode(a.body, &got)
		if !errors.Is(err, codec.ErrTampered) {
			t.Errorf("%s: %v, want ErrTampered", name, err)
		}
	}
	// The projection verifies what it reads.
	if err := pc.Decode(attacks["change the owner"].body, &p); !errors.Is(err, codec.ErrTampered) {
		t.Errorf("projection of a changed owner: %v, want ErrTampered", err)
	}
}

// Entities written before signing was adopted (metadata version 1) stay readable, unless
// RequireSignatures says the migration is over.
func TestSignedPlaintextReadsOldEntities(t *testing.T) {
	t.Parallel()
	kek := localKey(t, "kek-1")
	old, err := encrypting[oldDoc](t, &codec.Encryption{Key: kek}).Encode(&oldDoc{PK: "p", RK: "r", Owner: "alice", Level: 3, Content: "c"})
	if err != nil {
		t.Fatal(err)
	}
	var got signedDoc
	if err := encrypting[signedDoc](t, &codec.Encryption{Key: kek, Table: "Documents"}).Decode(old, &got); err != nil || got.Owner != "alice" {
		t.Fatalf("old entity: %+v, %v", got, err)
	}
	strict := encrypting[signedDoc](t, &codec.Encryption{Key: kek, Table: "Documents", RequireSignatures: true})
	if err := strict.Decode(old, &got); !errors.Is(err, codec.ErrTampered) {
		t.Fatalf("old entity with RequireSignatures: %v, want ErrTampered", err)
	}
	// Rewritten through the signing codec, it passes the strict reader.
	body, err := strict.Encode(&got)
	if err != nil {
		t.Fatal(err)
	}
	if err := strict.Decode(body, &got); err != nil {
		t.Fatalf("rewritten entity: %v", err)
	}
}

// Rotation keeps the signatures and the binding: after a re-wrap or a re-encryption the
// entity reads, and a change of a signed property is still detected.
func TestSignedPlaintextSurvivesRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old, next := localKey(t, "kek-old"), localKey(t, "kek-new")
	body, err := encrypting[signedDoc](t, &codec.Encryption{Key: old, Table: "Documents"}).Encode(newSignedDoc())
	if err != nil {
		t.Fatal(err)
	}
	x := &codec.Encryption{Key: next, Resolver: mustKeyring(t, old, next), Table: "Documents"}
	for name, rotate := range map[string]func(context.Context, *codec.Entity) (bool, error){"rewrap": x.Rewrap, "reencrypt": x.Reencrypt} {
		e, _ := codec.DecodeEntity(body)
		if changed, err := rotate(ctx, e); err != nil || !changed {
			t.Fatalf("%s: %v, %v", name, changed, err)
		}
		rotated, _ := codec.EncodeEntity(e)
		var got signedDoc
		if err := encrypting[signedDoc](t, x).Decode(rotated, &got); err != nil || got.Owner != "alice" || got.Content != "secret plans" {
			t.Fatalf("%s: read back %+v, %v", name, got, err)
		}
		forged := rewrite(t, rotated, func(e *codec.Entity) { e.Properties["Owner"] = "mallory" })
		if err := encrypting[signedDoc](t, x).Decode(forged, &got); !errors.Is(err, codec.ErrTampered) {
			t.Fatalf("%s: a changed owner after rotation: %v", name, err)
		}
	}
	// Rotating a bound entity needs its table.
	e, _ := codec.DecodeEntity(body)
	unbound := &codec.Encryption{Key: next, Resolver: mustKeyring(t, old, next)}
	if _, err := unbound.Rewrap(ctx, e); !errors.Is(err, codec.ErrTampered) {
		t.Fatalf("rewrap without the table: %v", err)
	}
}

func TestSignOptionIsChecked(t *testing.T) {
	t.Parallel()
	type signOnly struct {
		PK    string `table:",pk"`
		RK    string `table:",rk"`
		Owner string `table:",sign"`
	}
	type signEncrypt struct {
		PK    string `table:",pk"`
		RK    string `table:",rk"`
		Owner string `table:",sign,encrypt"`
	}
	type signKey struct {
		PK string `table:",pk,sign"`
		RK string `table:",rk"`
		S  string `table:",encrypt"`
	}
	if _, err := codec.For[signOnly](); !errors.Is(err, codec.ErrInvalidInput) {
		t.Errorf("sign without encrypted fields: %v", err)
	}
	if _, err := codec.For[signEncrypt](); !errors.Is(err, codec.ErrInvalidInput) {
		t.Errorf("sign and encrypt: %v", err)
	}
	if _, err := codec.For[signKey](); !errors.Is(err, codec.ErrInvalidInput) {
		t.Errorf("sign on the PartitionKey: %v", err)
	}
	if _, err := encrypting[signedDoc](t, localKeyEncryption(t)).EncodeProperties(newSignedDoc(), "Owner"); !errors.Is(err, codec.ErrInvalidInput) {
		t.Errorf("merge of a signed type: %v", err)
	}
}

func localKeyEncryption(t *testing.T) *codec.Encryption {
	return &codec.Encryption{Key: localKey(t, "k"), Table: "Documents"}
}
