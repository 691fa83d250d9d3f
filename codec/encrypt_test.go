package codec_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
)

// secretEmployee has encrypted properties of every kind next to plaintext ones.
type secretEmployee struct {
	Department string     `table:",pk"`
	EmployeeID string     `table:",rk"`
	Name       string     `table:"Name"`
	SSN        string     `table:"SSN,encrypt"`
	Salary     int64      `table:",encrypt"`
	Hired      time.Time  `table:",encrypt,omitempty"`
	Photo      []byte     `table:",encrypt"`
	Badge      codec.GUID `table:",encrypt"`
	Manager    *string    `table:",encrypt"`
	Tags       []string   `table:",json,encrypt"`
	Rating     float64    `table:",encrypt"`
	Active     bool       `table:",encrypt"`
	Level      int8       `table:",encrypt"`
	ETag       string     `table:",etag"`
}

func newSecretEmployee() *secretEmployee {
	mgr := "Jones"
	return &secretEmployee{
		Department: "Sales", EmployeeID: "000123", Name: "Don Hall", SSN: "123-45-6789",
		Salary: 98765432101, Hired: time.Date(2012, 4, 1, 9, 30, 0, 1234500, time.UTC),
		Photo: []byte{0, 1, 2, 0xff}, Badge: codec.GUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		Manager: &mgr, Tags: []string{"remote", "lead"}, Rating: 4.5, Active: true, Level: -3,
	}
}

func localKey(t testing.TB, id string) *codec.LocalKey {
	t.Helper()
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	k, err := codec.NewLocalKey(id, b)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func encrypting[T any](t testing.TB, x *codec.Encryption) *codec.Codec[T] {
	t.Helper()
	c, err := codec.For[T]()
	if err != nil {
		t.Fatal(err)
	}
	ec, err := c.WithEncryption(x)
	if err != nil {
		t.Fatal(err)
	}
	return ec
}

func TestEncryptionRoundTrip(t *testing.T) {
	t.Parallel()
	ec := encrypting[secretEmployee](t, &codec.Encryption{Key: localKey(t, "kek-1")})
	in := newSecretEmployee()
	body, err := ec.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	s := string(body)
	for _, secret := range []string{"123-45-6789", "98765432101", "Jones", "remote", "2012-04-01"} {
		if strings.Contains(s, secret) {
			t.Errorf("plaintext %q is in the stored body: %s", secret, s)
		}
	}
	for _, want := range []string{`"Name":"Don Hall"`, `"SSN@odata.type":"Edm.Binary"`, `"Level@odata.type":"Edm.Binary"`,
		`"` + codec.EncryptionMetadataProperty + `@odata.type":"Edm.Binary"`, `"PartitionKey":"Sales"`, `"RowKey":"000123"`} {
		if !strings.Contains(s, want) {
			t.Errorf("body lacks %s: %s", want, s)
		}
	}
	var out secretEmployee
	if err := ec.Decode(body, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*in, out) {
		t.Fatalf("round trip changed the entity:\n in %+v\nout %+v", *in, out)
	}
	// A fresh content key and nonces every time: equal plaintexts never look equal.
	again, _ := ec.Encode(in)
	if bytes.Equal(again, body) {
		t.Fatal("two encodings of one entity are identical")
	}

	// Absent values stay absent: nothing to encrypt, and the metadata says so.
	in2 := &secretEmployee{Department: "Sales", EmployeeID: "000124", Name: "Ann"}
	body, err = ec.Encode(in2)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), `"Hired"`) || strings.Contains(string(body), `"Manager"`) {
		t.Fatalf("absent encrypted properties were written: %s", body)
	}
	out = secretEmployee{}
	if err := ec.Decode(body, &out); err != nil || out.Manager != nil || !out.Hired.IsZero() || out.Name != "Ann" {
		t.Fatalf("decode of sparse entity: %+v, %v", out, err)
	}
}

func TestEncryptionRefusals(t *testing.T) {
	t.Parallel()
	c, err := codec.For[secretEmployee]()
	if err != nil {
		t.Fatal(err)
	}
	if !c.Encrypted() {
		t.Fatal("Encrypted() is false for a type with encrypted fields")
	}
	if _, err := c.Encode(newSecretEmployee()); !errors.Is(err, codec.ErrInvalidInput) {
		t.Fatalf("encode without Encryption: %v, want ErrInvalidInput (never write plaintext)", err)
	}
	ec := encrypting[secretEmployee](t, &codec.Encryption{Key: localKey(t, "k")})
	var ie *codec.InvalidInputError
	if _, err := ec.EncodeProperties(newSecretEmployee(), "Name"); !errors.As(err, &ie) || !strings.Contains(ie.Reason, "merge") {
		t.Fatalf("merge of an encrypted type: %v, want an *InvalidInputError about merges", err)
	}
	reader := encrypting[secretEmployee](t, &codec.Encryption{Resolver: mustKeyring(t, localKey(t, "k"))})
	if _, err := reader.Encode(newSecretEmployee()); !errors.Is(err, codec.ErrInvalidInput) {
		t.Fatalf("encode with a read-only Encryption: %v", err)
	}
	for _, x := range []*codec.Encryption{nil, {}, {Key: badIDKey{""}}, {Key: badIDKey{strings.Repeat("k", 256)}}} {
		if _, err := c.WithEncryption(x); !errors.Is(err, codec.ErrInvalidInput) {
			t.Errorf("WithEncryption(%+v): %v, want ErrInvalidInput", x, err)
		}
	}
	if _, err := codec.NewLocalKey("k", make([]byte, 16)); !errors.Is(err, codec.ErrInvalidInput) {
		t.Errorf("16-byte LocalKey: %v", err)
	}
	if _, err := codec.NewKeyring(localKey(t, "a"), localKey(t, "a")); !errors.Is(err, codec.ErrInvalidInput) {
		t.Errorf("keyring with a duplicate id: %v", err)
	}

	// The keys, Timestamp and ETag are never encrypted; the metadata name is reserved.
	type encPK struct {
		PK string `table:",pk,encrypt"`
		RK string `table:",rk"`
	}
	type encRK struct {
		PartitionKey string
		RowKey       string `table:",encrypt"`
	}
	type encTS struct {
		PartitionKey, RowKey string
		Timestamp            time.Time `table:",encrypt"`
	}
	type encETag struct {
		PartitionKey, RowKey string
		ETag                 string `table:",etag,encrypt"`
	}
	type reserved struct {
		PartitionKey, RowKey string
		Secret               string `table:",encrypt"`
		Meta                 []byte `table:"_EncryptionMetadata"`
	}
	for name, err := range map[string]error{
		"pk": forErr[encPK](), "rk": forErr[encRK](), "timestamp": forErr[encTS](), "etag": forErr[encETag](), "reserved": forErr[reserved](),
	} {
		if !errors.Is(err, codec.ErrInvalidInput) {
			t.Errorf("%s: For = %v, want ErrInvalidInput", name, err)
		}
	}

	// An encrypted value that no longer fits Edm.Binary is refused, naming the field.
	big := newSecretEmployee()
	big.SSN = strings.Repeat("x", codec.MaxBinaryBytes-10)
	_, err = ec.Encode(big)
	if !errors.As(err, &ie) || ie.Field != "SSN" || ie.Limit != codec.MaxBinaryBytes {
		t.Fatalf("oversized encrypted property: %v", err)
	}
}

type badIDKey struct{ id string }

func (k badIDKey) KeyID() string { return k.id }
func (badIDKey) WrapKey(context.Context, []byte) ([]byte, string, error) {
	return nil, "", errors.New("unused")
}
func (badIDKey) UnwrapKey(context.Context, []byte, string) ([]byte, error) {
	return nil, errors.New("unused")
}

func forErr[T any]() error {
	_, err := codec.For[T]()
	return err
}

func mustKeyring(t testing.TB, keys ...codec.KeyEncryptionKey) *codec.Keyring {
	t.Helper()
	r, err := codec.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// edit decodes body as a dynamic entity, lets fn change it, and encodes it again: what
// someone holding the storage key (not the encryption keys) can do to a stored entity.
func edit(t *testing.T, body []byte, fn func(e *codec.Entity)) []byte {
	t.Helper()
	e, err := codec.DecodeEntity(body)
	if err != nil {
		t.Fatal(err)
	}
	fn(e)
	out, err := codec.EncodeEntity(e)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDecryptionFailuresAreTypedAndLoseNothing(t *testing.T) {
	t.Parallel()
	k1 := localKey(t, "kek-1")
	ec := encrypting[secretEmployee](t, &codec.Encryption{Key: k1})
	body, err := ec.Encode(newSecretEmployee())
	if err != nil {
		t.Fatal(err)
	}
	other, err := ec.Encode(&secretEmployee{Department: "Sales", EmployeeID: "000999", SSN: "999-99-9999", Salary: 1})
	if err != nil {
		t.Fatal(err)
	}
	otherEnt, _ := codec.DecodeEntity(other)
	flip := func(name string, at int) func(e *codec.Entity) {
		return func(e *codec.Entity) {
			b := append([]byte(nil), e.Properties[name].([]byte)...)
			if at < 0 {
				at += len(b)
			}
			b[at] ^= 0x01
			e.Properties[name] = b
		}
	}
	sameIDOtherBytes := localKey(t, "kek-1")
	metaName := codec.EncryptionMetadataProperty

	cases := []struct {
		name   string
		body   []byte
		reader *codec.Encryption
		want   error
	}{
		{"wrong key (same id, other material)", body, &codec.Encryption{Key: sameIDOtherBytes}, codec.ErrWrongKey},
		{"unknown key", body, &codec.Encryption{Resolver: mustKeyring(t, localKey(t, "kek-2"))}, codec.ErrUnknownKey},
		{"no encryption configured", body, nil, codec.ErrUnknownKey},
		{"metadata removed", edit(t, body, func(e *codec.Entity) { delete(e.Properties, metaName) }), nil, codec.ErrMissingKeyID},
		{"metadata without key id", edit(t, body, func(e *codec.Entity) {
			m := e.Properties[metaName].([]byte)
			k := int(m[2]) // layout: version, cipher, key id length, key id, ...
			e.Properties[metaName] = append(append(append([]byte(nil), m[:2]...), 0), m[3+k:]...)
		}), nil, codec.ErrMissingKeyID},
		{"ciphertext altered", edit(t, body, flip("SSN", -1)), nil, codec.ErrTampered},
		{"nonce altered", edit(t, body, flip("SSN", 1)), nil, codec.ErrTampered},
		{"ciphertexts swapped between properties", edit(t, body, func(e *codec.Entity) {
			e.Properties["SSN"], e.Properties["Salary"] = e.Properties["Salary"], e.Properties["SSN"]
		}), nil, codec.ErrTampered},
		{"ciphertext copied from another entity", edit(t, body, func(e *codec.Entity) {
			e.Properties["SSN"] = otherEnt.Properties["SSN"]
		}), nil, codec.ErrTampered},
		{"entity moved to another RowKey", edit(t, body, func(e *codec.Entity) { e.RowKey = "000124" }), nil, codec.ErrTampered},
		{"entity moved to another PartitionKey", edit(t, body, func(e *codec.Entity) { e.PartitionKey = "Marketing" }), nil, codec.ErrTampered},
		{"encrypted property removed", edit(t, body, func(e *codec.Entity) { delete(e.Properties, "Salary") }), nil, codec.ErrTampered},
		{"encrypted property replaced by plaintext", edit(t, body, func(e *codec.Entity) { e.Properties["SSN"] = "000-00-0000" }), nil, codec.ErrTampered},
		{"metadata tag altered", edit(t, body, flip(metaName, -1)), nil, codec.ErrTampered},
		{"metadata property list altered", edit(t, body, func(e *codec.Entity) {
			m := append([]byte(nil), e.Properties[metaName].([]byte)...)
			i := bytes.Index(m, []byte("SSN"))
			m[i] = 'X' // "XSN": still well formed, no longer authentic
			e.Properties[metaName] = m
		}), nil, codec.ErrTampered},
		{"metadata swapped with another entity's", edit(t, body, func(e *codec.Entity) {
			e.Properties[metaName] = otherEnt.Properties[metaName]
		}), nil, codec.ErrTampered},
		{"metadata truncated", edit(t, body, func(e *codec.Entity) {
			m := e.Properties[metaName].([]byte)
			e.Properties[metaName] = m[:len(m)-3]
		}), nil, codec.ErrTampered},
		{"wrapped key altered", edit(t, body, func(e *codec.Entity) {
			m := append([]byte(nil), e.Properties[metaName].([]byte)...)
			k := int(m[2])
			a := int(m[3+k])
			m[3+k+1+a+2+5] ^= 1 // a byte inside the wrapped key
			e.Properties[metaName] = m
		}), nil, codec.ErrWrongKey},
	}
	good := &codec.Encryption{Key: k1}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reader, err := codec.For[secretEmployee]()
			if err != nil {
				t.Fatal(err)
			}
			if tc.reader != nil {
				reader, err = reader.WithEncryption(tc.reader)
				if err != nil {
					t.Fatal(err)
				}
			} else if !strings.Contains(tc.name, "no encryption") {
				reader, _ = reader.WithEncryption(good)
			}
			before := append([]byte(nil), tc.body...)
			var out secretEmployee
			err = reader.Decode(tc.body, &out)
			var ee *codec.EncryptionError
			if !errors.Is(err, tc.want) || !errors.As(err, &ee) {
				t.Fatalf("decode = %v, want an *EncryptionError wrapping %v", err, tc.want)
			}
			if ee.PartitionKey == "" || ee.Reason == "" {
				t.Errorf("error does not identify the entity: %+v", ee)
			}
			for _, secret := range []string{"123-45-6789", "98765432101"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error leaks plaintext: %v", err)
				}
			}
			if !bytes.Equal(before, tc.body) {
				t.Fatal("decode changed its input")
			}
		})
	}
	// The untouched entity still reads with the right key: a failure lost nothing.
	var out secretEmployee
	if err := encrypting[secretEmployee](t, good).Decode(body, &out); err != nil || out.SSN != "123-45-6789" {
		t.Fatalf("good read after failures: %+v, %v", out, err)
	}
}

func TestEncryptedPropertyIsNeverReadAsPlaintext(t *testing.T) {
	t.Parallel()
	ec := encrypting[secretEmployee](t, &codec.Encryption{Key: localKey(t, "k")})
	body, _ := ec.Encode(newSecretEmployee())
	// A type that forgot the encrypt option would receive base64 ciphertext as its "SSN".
	type careless struct {
		PartitionKey, RowKey string
		SSN                  string
	}
	c, _ := codec.For[careless]()
	var out careless
	var de *codec.DecodeError
	if err := c.Decode(body, &out); !errors.As(err, &de) || de.Property != "SSN" {
		t.Fatalf("plaintext reader of an encrypted property: %v, want a *DecodeError on SSN", err)
	}
	// A type that does not map the encrypted properties reads the others.
	type nameOnly struct {
		PartitionKey, RowKey string
		Name                 string
	}
	n, _ := codec.For[nameOnly]()
	var no nameOnly
	if err := n.Decode(body, &no); err != nil || no.Name != "Don Hall" {
		t.Fatalf("reader of the plaintext properties: %+v, %v", no, err)
	}
	// Dynamic entities pass ciphertext and metadata through unchanged (archivers).
	e, err := codec.DecodeEntity(body)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Properties["SSN"].([]byte); !ok {
		t.Fatalf("dynamic SSN is %T, want []byte", e.Properties["SSN"])
	}
	if id, ok := e.EncryptionKeyID(); !ok || id != "k" {
		t.Fatalf("EncryptionKeyID = %q, %v", id, ok)
	}
	copied, _ := codec.EncodeEntity(e)
	var back secretEmployee
	if err := ec.Decode(copied, &back); err != nil || back.SSN != "123-45-6789" {
		t.Fatalf("entity copied verbatim does not decrypt: %+v, %v", back, err)
	}
}

func TestRewrap(t *testing.T) {
	t.Parallel()
	k1, k2 := localKey(t, "kek-2023"), localKey(t, "kek-2024")
	ec := encrypting[secretEmployee](t, &codec.Encryption{Key: k1})
	body, _ := ec.Encode(newSecretEmployee())
	e, _ := codec.DecodeEntity(body)
	ssnBefore := append([]byte(nil), e.Properties["SSN"].([]byte)...)

	rotate := &codec.Encryption{Key: k2, Resolver: mustKeyring(t, k1, k2)}
	// Without the old key nothing changes.
	noOld := &codec.Encryption{Key: k2}
	snapshot := fmt.Sprint(e.Properties)
	if changed, err := noOld.Rewrap(t.Context(), e); changed || !errors.Is(err, codec.ErrUnknownKey) {
		t.Fatalf("rewrap without the old key: %v, %v", changed, err)
	}
	if fmt.Sprint(e.Properties) != snapshot {
		t.Fatal("a failed rewrap changed the entity")
	}
	changed, err := rotate.Rewrap(t.Context(), e)
	if err != nil || !changed {
		t.Fatalf("rewrap: %v, %v", changed, err)
	}
	if id, _ := e.EncryptionKeyID(); id != "kek-2024" {
		t.Fatalf("key id after rewrap = %q", id)
	}
	if !bytes.Equal(ssnBefore, e.Properties["SSN"].([]byte)) {
		t.Fatal("rewrap changed an encrypted property (it must only replace the metadata)")
	}
	if changed, err := rotate.Rewrap(t.Context(), e); changed || err != nil {
		t.Fatalf("second rewrap: %v, %v (want no change)", changed, err)
	}
	rotated, _ := codec.EncodeEntity(e)
	var out secretEmployee
	if err := encrypting[secretEmployee](t, &codec.Encryption{Key: k2}).Decode(rotated, &out); err != nil || out.SSN != "123-45-6789" {
		t.Fatalf("read with the new key only: %+v, %v", out, err)
	}
	if err := encrypting[secretEmployee](t, &codec.Encryption{Key: k1}).Decode(rotated, &out); !errors.Is(err, codec.ErrUnknownKey) {
		t.Fatalf("read with the old key only after rotation: %v", err)
	}
	// The rewrapped metadata is bound to the entity like the original.
	moved := edit(t, rotated, func(e *codec.Entity) { e.RowKey = "elsewhere" })
	if err := encrypting[secretEmployee](t, &codec.Encryption{Key: k2}).Decode(moved, &out); !errors.Is(err, codec.ErrTampered) {
		t.Fatalf("moved rewrapped entity: %v", err)
	}
	plain := &codec.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"A": "b"}}
	if changed, err := rotate.Rewrap(t.Context(), plain); changed || err != nil {
		t.Fatalf("rewrap of an unencrypted entity: %v, %v", changed, err)
	}
}

// A copy of an encrypted entity under other keys (an index copy) is encoded with its own
// keys; re-keying the encoded form is tampering.
func TestCopyUnderOtherKeys(t *testing.T) {
	t.Parallel()
	ec := encrypting[secretEmployee](t, &codec.Encryption{Key: localKey(t, "k")})
	in := newSecretEmployee()
	cp := *in
	ec.SetKeys(&cp, "Sales", "email_x")
	if pk, rk := ec.Keys(&cp); pk != "Sales" || rk != "email_x" || in.EmployeeID != "000123" {
		t.Fatalf("SetKeys: %q %q (original %q)", pk, rk, in.EmployeeID)
	}
	body, _ := ec.Encode(&cp)
	var out secretEmployee
	if err := ec.Decode(body, &out); err != nil || out.EmployeeID != "email_x" || out.SSN != in.SSN {
		t.Fatalf("copy encoded with its keys: %+v, %v", out, err)
	}
	original, _ := ec.Encode(in)
	rekeyed := edit(t, original, func(e *codec.Entity) { e.RowKey = "email_x" })
	if err := ec.Decode(rekeyed, &out); !errors.Is(err, codec.ErrTampered) {
		t.Fatalf("re-keyed encoded entity: %v, want ErrTampered", err)
	}
	ec.SetKeys(nil, "a", "b") // no panic
}

func TestRegistryEncrypts(t *testing.T) {
	t.Parallel()
	x := &codec.Encryption{Key: localKey(t, "k")}
	r, err := codec.NewRegistry(codec.RegistryOptions{Encryption: x})
	if err != nil {
		t.Fatal(err)
	}
	if err := codec.Register[secretEmployee](r, "Employee"); err != nil {
		t.Fatal(err)
	}
	body, err := r.Encode(newSecretEmployee())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), "123-45-6789") {
		t.Fatal("registry wrote plaintext")
	}
	v, err := r.Decode(body)
	if err != nil || v.(*secretEmployee).SSN != "123-45-6789" {
		t.Fatalf("registry decode: %+v, %v", v, err)
	}
	plainReg, _ := codec.NewRegistry(codec.RegistryOptions{})
	_ = codec.Register[secretEmployee](plainReg, "Employee")
	if _, err := plainReg.Encode(newSecretEmployee()); !errors.Is(err, codec.ErrInvalidInput) {
		t.Fatalf("registry without encryption encoded an encrypted type: %v", err)
	}
}

func TestSelectIncludesEncryptionMetadata(t *testing.T) {
	t.Parallel()
	c, _ := codec.For[secretEmployee]()
	sel := c.Select()
	if sel[len(sel)-1] != codec.EncryptionMetadataProperty {
		t.Fatalf("Select() = %v: a projection must fetch the metadata to decrypt", sel)
	}
}

func TestLocalKeyNeverPrintsItsMaterial(t *testing.T) {
	t.Parallel()
	material := bytes.Repeat([]byte{0xAB}, 32)
	k, err := codec.NewLocalKey("kek-1", material)
	if err != nil {
		t.Fatal(err)
	}
	s := fmt.Sprintf("%v %+v %#v %s %v %+v", k, k, k, k, *k, *k)
	if strings.Contains(s, "171") || strings.Contains(strings.ToLower(s), "abab") || !strings.Contains(s, "kek-1") {
		t.Fatalf("printed LocalKey: %s", s)
	}
	material[0] = 0 // the key holds a copy
	if w, _, err := k.WrapKey(t.Context(), make([]byte, 32)); err != nil || len(w) != 40 {
		t.Fatalf("WrapKey: %d bytes, %v", len(w), err)
	}
}

func TestBlindIndex(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{7}, 32)
	ix, err := codec.NewBlindIndex("Email", key, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := ix.Sum("  JonesJ@Contoso.com ")
	// The documented construction, computed here independently.
	m := hmac.New(sha256.New, key)
	m.Write([]byte("tablepatterns/blindindex/v1\x00Email\x00jonesj@contoso.com"))
	if want := hex.EncodeToString(m.Sum(nil)[:16]); got != want {
		t.Fatalf("Sum = %s, want %s", got, want)
	}
	if ix.Sum("jonesj@contoso.com") != got {
		t.Fatal("normalization: equal addresses give different values")
	}
	if ix.Sum("jonesk@contoso.com") == got {
		t.Fatal("different values collide")
	}
	if err := codec.ValidateKey("RowKey", "email_"+got); err != nil {
		t.Fatalf("index value is not a valid key: %v", err)
	}
	other, _ := codec.NewBlindIndex("Phone", key, nil)
	otherKey, _ := codec.NewBlindIndex("Email", bytes.Repeat([]byte{8}, 32), nil)
	if other.Sum("jonesj@contoso.com") == got || otherKey.Sum("jonesj@contoso.com") == got {
		t.Fatal("index name or key does not separate values")
	}
	short, _ := codec.NewBlindIndex("Email", key, &codec.BlindIndexOptions{Bytes: 2, Normalize: strings.ToUpper})
	if s := short.Sum("x"); len(s) != 4 {
		t.Fatalf("2-byte index value %q", s)
	}
	for _, bad := range []struct {
		name string
		key  []byte
		n    int
	}{{"", key, 0}, {"E", key[:15], 0}, {"E", key, 1}, {"E", key, 33}} {
		if _, err := codec.NewBlindIndex(bad.name, bad.key, &codec.BlindIndexOptions{Bytes: bad.n}); !errors.Is(err, codec.ErrInvalidInput) {
			t.Errorf("NewBlindIndex(%q, %d bytes, Bytes %d) = %v", bad.name, len(bad.key), bad.n, err)
		}
	}
}

func TestEncryptedLayoutMatchesTheDocumentation(t *testing.T) {
	t.Parallel()
	ec := encrypting[secretEmployee](t, &codec.Encryption{Key: localKey(t, "kek-1")})
	in := &secretEmployee{Department: "D", EmployeeID: "E", SSN: "1"}
	body, _ := ec.Encode(in)
	e, _ := codec.DecodeEntity(body)
	ssn := e.Properties["SSN"].([]byte)
	// version | 12-byte nonce | ciphertext of the JSON value `"1"` (3 bytes) | 16-byte tag
	if ssn[0] != 1 || len(ssn) != 1+12+3+16 {
		t.Fatalf("SSN layout: %d bytes, version %d", len(ssn), ssn[0])
	}
	m := e.Properties[codec.EncryptionMetadataProperty].([]byte)
	k := int(m[2])
	if m[0] != 1 || m[1] != 1 || string(m[3:3+k]) != "kek-1" {
		t.Fatalf("metadata header: % x", m[:8])
	}
	i := 3 + k
	alg := string(m[i+1 : i+1+int(m[i])])
	i += 1 + int(m[i])
	w := int(m[i])<<8 | int(m[i+1])
	i += 2 + w
	n := int(m[i])<<8 | int(m[i+1])
	i += 2
	var names []string
	for j := 0; j < n; j++ {
		l := int(m[i])<<8 | int(m[i+1])
		names = append(names, string(m[i+2:i+2+l]))
		i += 2 + l
	}
	// Every encrypted property present; the zero-valued ones are present too (only nil
	// pointers, nil slices and omitempty zeros are absent).
	if alg != "A256KW" || w != 40 || len(m) != i+12+16 || strings.Join(names, ",") != "SSN,Salary,Badge,Rating,Active,Level" {
		t.Fatalf("metadata: alg %q, wrapped %d bytes, names %v, %d bytes left", alg, w, names, len(m)-i)
	}
	if got := base64.StdEncoding.EncodeToString(m); !strings.Contains(string(body), got) {
		t.Fatal("metadata is not stored as base64 Edm.Binary")
	}
}

// FuzzDecodeEncrypted feeds altered entities to an encrypting decoder: it never panics, and
// whatever it accepts decrypted to the values written (authentication leaves no middle).
func FuzzDecodeEncrypted(f *testing.F) {
	k, _ := codec.NewLocalKey("k", bytes.Repeat([]byte{1}, 32))
	c, _ := codec.For[secretEmployee]()
	ec, _ := c.WithEncryption(&codec.Encryption{Key: k})
	in := newSecretEmployee()
	body, _ := ec.Encode(in)
	f.Add(body)
	f.Add([]byte(`{"PartitionKey":"a","RowKey":"b","_EncryptionMetadata@odata.type":"Edm.Binary","_EncryptionMetadata":"AQEBawZBMjU2S1cAAQA="}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out secretEmployee
		if err := ec.Decode(data, &out); err != nil {
			return
		}
		if out.SSN != "" && out.SSN != in.SSN {
			t.Fatalf("accepted a forged SSN %q", out.SSN)
		}
	})
}

// Swapping the encrypted properties (and metadata) of two entities, or two encrypted
// properties of one entity, or moving a whole signed entity to another key: ErrTampered.
func TestSwappedEncryptedPropertiesAreTampered(t *testing.T) {
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
