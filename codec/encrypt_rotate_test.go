package codec_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
)

// Reencrypt gives the entity a fresh content key and new ciphertexts: the old key with the
// old metadata no longer opens them, the new key opens everything, and a tampered entity
// is refused and left unchanged.
func TestReencrypt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old, next := localKey(t, "kek-old"), localKey(t, "kek-new")
	body, err := encrypting[secretEmployee](t, &codec.Encryption{Key: old}).Encode(newSecretEmployee())
	if err != nil {
		t.Fatal(err)
	}
	e, err := codec.DecodeEntity(body)
	if err != nil {
		t.Fatal(err)
	}
	oldMeta := e.Properties[codec.EncryptionMetadataProperty].([]byte)
	oldSSN := e.Properties["SSN"].([]byte)
	x := &codec.Encryption{Key: next, Resolver: mustKeyring(t, old, next)}

	tampered := cloneEntity(e)
	tampered.Properties["Salary"].([]byte)[20] ^= 1
	if changed, err := x.Reencrypt(ctx, tampered); !errors.Is(err, codec.ErrTampered) || changed {
		t.Fatalf("tampered: %v, %v", changed, err)
	}
	missing := cloneEntity(e)
	delete(missing.Properties, "SSN")
	if changed, err := x.Reencrypt(ctx, missing); !errors.Is(err, codec.ErrTampered) || changed ||
		!bytes.Equal(missing.Properties[codec.EncryptionMetadataProperty].([]byte), oldMeta) {
		t.Fatalf("missing property: %v, %v (or the entity changed)", changed, err)
	}

	changed, err := x.Reencrypt(ctx, e)
	if err != nil || !changed {
		t.Fatalf("reencrypt: %v, %v", changed, err)
	}
	if bytes.Equal(e.Properties["SSN"].([]byte), oldSSN) {
		t.Fatal("the ciphertext was not rewritten")
	}
	if id, _ := e.EncryptionKeyID(); id != "kek-new" {
		t.Fatalf("key id %q", id)
	}
	if got := codec.EncryptedProperties(e); len(got) != 10 {
		t.Fatalf("listed properties %q", got)
	}
	// The new key alone reads it back whole.
	newBody, err := codec.EncodeEntity(e)
	if err != nil {
		t.Fatal(err)
	}
	var got secretEmployee
	if err := encrypting[secretEmployee](t, &codec.Encryption{Key: next}).Decode(newBody, &got); err != nil || got.SSN != newSecretEmployee().SSN || got.Salary != newSecretEmployee().Salary {
		t.Fatalf("read back: %+v, %v", got, err)
	}
	// The old key with the old metadata does not.
	e.Properties[codec.EncryptionMetadataProperty] = oldMeta
	forged, _ := codec.EncodeEntity(e)
	if err := encrypting[secretEmployee](t, &codec.Encryption{Key: old}).Decode(forged, &got); !errors.Is(err, codec.ErrTampered) {
		t.Fatalf("old key with old metadata: %v, want ErrTampered", err)
	}
	// Already under the new key: nothing to do.
	e2, _ := codec.DecodeEntity(newBody)
	if changed, err := x.Reencrypt(ctx, e2); err != nil || changed {
		t.Fatalf("second reencrypt: %v, %v", changed, err)
	}
}

func cloneEntity(e *codec.Entity) *codec.Entity {
	c := &codec.Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey, Properties: map[string]any{}}
	for k, v := range e.Properties {
		if b, ok := v.([]byte); ok {
			v = bytes.Clone(b)
		}
		c.Properties[k] = v
	}
	return c
}

// After a re-encryption, the old key with the pre-rotation metadata opens none of
// the new ciphertexts; an attacker who restores the old metadata next to the new
// ciphertexts gets ErrTampered, not plaintext.
func TestReencryptedEntityNeverOpensWithTheOldKeyAndMetadata(t *testing.T) {
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
