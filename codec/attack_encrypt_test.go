package codec_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
)

// Attack: the value of an encrypted time.Time field that fails to encode (out of the
// Edm.DateTime range) must not appear in the error text, like a MarshalText error's.
// The package doc ("Values of fields tagged encrypt never appear in error text") and
// TestEncryptedValuesNeverInErrorText promise it for the encode side too.
func TestAttackEncryptedTimeOutOfRangeNotInErrorText(t *testing.T) {
	t.Parallel()
	type secretBirth struct {
		PK   string    `table:",pk"`
		RK   string    `table:",rk"`
		Born time.Time `table:",encrypt"`
	}
	c := encrypting[secretBirth](t, &codec.Encryption{Key: localKey(t, "kek-1")})
	secret := time.Date(1234, 5, 6, 7, 8, 9, 0, time.UTC)
	_, err := c.Encode(&secretBirth{PK: "p", RK: "r", Born: secret})
	if !errors.Is(err, codec.ErrInvalidInput) {
		t.Fatalf("encode: %v, want ErrInvalidInput", err)
	}
	if text := fmt.Sprintf("%v %+v", err, err); strings.Contains(text, "1234-05-06") {
		t.Errorf("encode error carries the encrypted field's value: %s", text)
	}
}

// Attack: downgrade a signed entity by replaying an earlier, version-1 copy of the same
// entity (same keys, same key-encryption key: e.g. from a backup made before signing was
// adopted) with its signed plaintext rewritten. A strict reader (RequireSignatures) must
// refuse it, with or without table binding; a lenient one accepts it (documented).
func TestAttackReplayV1MetadataDowngrade(t *testing.T) {
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

// Attack: swap the encrypted properties (and metadata) of two entities, or two encrypted
// properties of one entity, or move a whole signed entity to another key: ErrTampered.
func TestAttackSwapEncryptedProperties(t *testing.T) {
	t.Parallel()
	x := &codec.Encryption{Key: localKey(t, "kek-1"), Table: "Documents"}
	type twoSecrets struct {
		PK    string `table:",pk"`
		RK    string `table:",rk"`
		Owner string `table:",sign"`
		A     string `table:",encrypt"`
		B     string `table:",encrypt"`
	}
	c := encrypting[twoSecrets](t, x)
	alice, _ := c.Encode(&twoSecrets{PK: "t", RK: "alice", Owner: "alice", A: "a-secret", B: "b-secret"})
	bob, _ := c.Encode(&twoSecrets{PK: "t", RK: "bob", Owner: "bob", A: "bob-a", B: "bob-b"})
	ae, _ := codec.DecodeEntity(alice)
	be, _ := codec.DecodeEntity(bob)
	attacks := map[string][]byte{
		"swap A and B": rewrite(t, alice, func(e *codec.Entity) {
			e.Properties["A"], e.Properties["B"] = e.Properties["B"], e.Properties["A"]
		}),
		"bob's A into alice": rewrite(t, alice, func(e *codec.Entity) { e.Properties["A"] = be.Properties["A"] }),
		"bob's A and metadata into alice": rewrite(t, alice, func(e *codec.Entity) {
			e.Properties["A"], e.Properties[codec.EncryptionMetadataProperty] = be.Properties["A"], be.Properties[codec.EncryptionMetadataProperty]
		}),
		"bob's whole encrypted state into alice": rewrite(t, alice, func(e *codec.Entity) {
			for _, n := range []string{"A", "B", "Owner", codec.EncryptionMetadataProperty} {
				e.Properties[n] = be.Properties[n]
			}
		}),
		"alice's row copied under bob's keys": rewrite(t, alice, func(e *codec.Entity) { e.RowKey = "bob" }),
		"B removed":                           rewrite(t, alice, func(e *codec.Entity) { delete(e.Properties, "B") }),
		"B made plaintext":                    rewrite(t, alice, func(e *codec.Entity) { e.Properties["B"] = "b-secret" }),
		"metadata removed":                    rewrite(t, alice, func(e *codec.Entity) { delete(e.Properties, codec.EncryptionMetadataProperty) }),
	}
	_ = ae
	for name, body := range attacks {
		var got twoSecrets
		err := c.Decode(body, &got)
		if !errors.Is(err, codec.ErrTampered) && !errors.Is(err, codec.ErrMissingKeyID) {
			t.Errorf("%s: %+v, %v, want ErrTampered", name, got, err)
		}
	}
}

// Attack: after a re-encryption, the old key with the pre-rotation metadata opens none of
// the new ciphertexts; an attacker who restores the old metadata next to the new
// ciphertexts gets ErrTampered, not plaintext.
func TestAttackReencryptOldKeyOldMetadata(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old, next := localKey(t, "kek-old"), localKey(t, "kek-new")
	type doc struct {
		PK string `table:",pk"`
		RK string `table:",rk"`
		S  string `table:",encrypt"`
		T  []byte `table:",encrypt"`
	}
	body, err := encrypting[doc](t, &codec.Encryption{Key: old}).Encode(&doc{PK: "p", RK: "r", S: "secret", T: []byte("more")})
	if err != nil {
		t.Fatal(err)
	}
	pre, _ := codec.DecodeEntity(body)
	e, _ := codec.DecodeEntity(body)
	x := &codec.Encryption{Key: next, Resolver: mustKeyring(t, old, next)}
	if changed, err := x.Reencrypt(ctx, e); err != nil || !changed {
		t.Fatalf("reencrypt: %v %v", changed, err)
	}
	for _, n := range []string{"S", "T"} {
		if string(e.Properties[n].([]byte)) == string(pre.Properties[n].([]byte)) {
			t.Errorf("%s: ciphertext unchanged", n)
		}
	}
	// The old metadata (a backup) put next to the new ciphertexts, read with the old key.
	mixed := *e
	mixed.Properties = map[string]any{}
	for k, v := range e.Properties {
		mixed.Properties[k] = v
	}
	mixed.Properties[codec.EncryptionMetadataProperty] = pre.Properties[codec.EncryptionMetadataProperty]
	mb, _ := codec.EncodeEntity(&mixed)
	var got doc
	err = encrypting[doc](t, &codec.Encryption{Key: old}).Decode(mb, &got)
	if !errors.Is(err, codec.ErrTampered) || got.S == "secret" {
		t.Fatalf("old key + old metadata on new ciphertexts: %+v, %v", got, err)
	}
	// And the rotated entity reads with the new key only.
	rb, _ := codec.EncodeEntity(e)
	if err := encrypting[doc](t, &codec.Encryption{Key: next}).Decode(rb, &got); err != nil || got.S != "secret" {
		t.Fatalf("new key: %+v %v", got, err)
	}
	if err := encrypting[doc](t, &codec.Encryption{Key: old}).Decode(rb, &got); !errors.Is(err, codec.ErrUnknownKey) {
		t.Fatalf("old key on rotated entity: %v", err)
	}
}

// Attack: the same v1 replay read by a strict reader through a projection that maps the
// signed Owner column and decrypts (doc.go: "a projection with an encrypted field checks
// what it reads"). On a version-2 entity the projection verifies Owner; on a replayed
// version-1 copy RequireSignatures does not help it, because the projection's own type
// tags nothing "sign": the owner can be rewritten unnoticed. With Table set, the missing
// binding refuses it; without, it is accepted.
func TestAttackReplayV1ThroughStrictProjection(t *testing.T) {
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
