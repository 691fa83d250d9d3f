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

// Downgrading a signed entity by replaying an earlier, version-1 copy of the same
// entity (same keys, same key-encryption key: e.g. from a backup made before signing was
// adopted) with its signed plaintext rewritten. A strict reader (RequireSignatures) must
// refuse it, with or without table binding; a lenient one accepts it (documented).
func TestStrictReaderRefusesAReplayedUnsignedCopy(t *testing.T) {
	t.Parallel()
	kek := localKey(t, "kek-1")
	// The pre-signing version of the entity, as a backup holds it.
	v1, err := encrypting[oldDoc](t, &codec.Encryption{Key: kek}).Encode(&oldDoc{PK: "tenant-a", RK: "doc-1", Owner: "alice", Level: 1, Content: "secret plans"})
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"", "Documents"} {
		x := &codec.Encryption{Key: kek, Table: table}
		strict := &codec.Encryption{Key: kek, Table: table, RequireSignatures: true}
		// The current, signed version.
		cur, err := encrypting[signedDoc](t, x).Encode(newSignedDoc())
		if err != nil {
			t.Fatal(err)
		}
		// The attacker writes back the v1 metadata and ciphertext over the current row
		// and changes the owner.
		forged := rewrite(t, cur, func(e *codec.Entity) {
			old, _ := codec.DecodeEntity(v1)
			e.Properties[codec.EncryptionMetadataProperty] = old.Properties[codec.EncryptionMetadataProperty]
			e.Properties["Content"] = old.Properties["Content"]
			e.Properties["Owner"] = "mallory"
		})
		var got signedDoc
		if err := encrypting[signedDoc](t, strict).Decode(forged, &got); !errors.Is(err, codec.ErrTampered) {
			t.Errorf("table %q: strict reader accepted a replayed v1 metadata: %+v, %v", table, got, err)
		}
		// Lenient (documented): the v1 copy reads, without the check.
		if err := encrypting[signedDoc](t, x).Decode(forged, &got); err != nil || got.Owner != "mallory" {
			t.Logf("table %q: lenient reader: %+v, %v", table, got, err)
		}
	}
}

// The same version-1 replay read by a strict reader through a projection that maps the
// signed Owner column and decrypts (doc.go: "a projection with an encrypted field checks
// what it reads"). On a version-2 entity the projection verifies Owner; on a replayed
// version-1 copy RequireSignatures does not help it, because the projection's own type
// tags nothing "sign": the owner can be rewritten unnoticed. With Table set, the missing
// binding refuses it; without, it is accepted.
func TestStrictProjectionRefusesAReplayedUnsignedCopyOnlyWhenTableBound(t *testing.T) {
	t.Parallel()
	kek := localKey(t, "kek-1")
	v1, err := encrypting[oldDoc](t, &codec.Encryption{Key: kek}).Encode(&oldDoc{PK: "tenant-a", RK: "doc-1", Owner: "alice", Level: 1, Content: "secret plans"})
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"", "Documents"} {
		strict := &codec.Encryption{Key: kek, Table: table, RequireSignatures: true}
		cur, err := encrypting[signedDoc](t, &codec.Encryption{Key: kek, Table: table}).Encode(newSignedDoc())
		if err != nil {
			t.Fatal(err)
		}
		// Control: on the current (v2) entity, a changed owner is caught by the projection.
		var p projection
		if err := encrypting[projection](t, strict).Decode(rewrite(t, cur, func(e *codec.Entity) { e.Properties["Owner"] = "mallory" }), &p); !errors.Is(err, codec.ErrTampered) {
			t.Fatalf("table %q: v2 control: %+v, %v", table, p, err)
		}
		forged := rewrite(t, cur, func(e *codec.Entity) {
			old, _ := codec.DecodeEntity(v1)
			e.Properties[codec.EncryptionMetadataProperty] = old.Properties[codec.EncryptionMetadataProperty]
			e.Properties["Content"] = old.Properties["Content"]
			e.Properties["Owner"] = "mallory"
		})
		if err := encrypting[projection](t, strict).Decode(forged, &p); !errors.Is(err, codec.ErrTampered) {
			t.Errorf("table %q: strict projection accepted a replayed v1 metadata with a rewritten signed owner: %+v, %v", table, p, err)
		}
	}
}
