package codec

import (
	"context"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"unsafe"
)

// This file connects the envelope (envelope.go) to the typed encoder and decoder.

// WithEncryption returns a codec for T that encrypts the fields tagged "encrypt" on every
// Encode and decrypts them on every Decode, with the keys of e (see the package doc,
// "Encryption"). The plan of T is shared with c; c itself is unchanged. A type without
// encrypted fields is accepted and simply passes through.
//
// It returns an *InvalidInputError if e is nil, has neither Key nor Resolver, or its Key
// has an empty or over-long key id.
func (c *Codec[T]) WithEncryption(e *Encryption) (*Codec[T], error) {
	if err := e.validate(); err != nil {
		err.(*InvalidInputError).Type = c.p.typeName
		return nil, err
	}
	return &Codec[T]{p: c.p, enc: e, reserved: c.reserved}, nil
}

// Encrypted reports whether T has fields with the encrypt option. Entities of such a type
// can only be written whole (insert, replace, upsert in replace mode): a merge is refused.
func (c *Codec[T]) Encrypted() bool { return c.p.encrypted > 0 }

// EncodeContext is Encode with a context for the key-encryption key's WrapKey (a remote
// key vault may need one). Encode uses context.Background().
//
// Errors: *InvalidInputError (limits; a type with encrypted fields and no Encryption Key),
// *EncryptionError (the key failed to wrap the content key).
func (c *Codec[T]) EncodeContext(ctx context.Context, v *T) ([]byte, error) {
	out, err := c.appendEncode(ctx, make([]byte, 0, 128+64*len(c.p.fields)), v)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeContext is Decode with a context for the key resolver and UnwrapKey.
//
// Errors: *DecodeError, or an *EncryptionError wrapping ErrUnknownKey, ErrWrongKey,
// ErrTampered or ErrMissingKeyID (or the key's own error). v is then partly filled and
// must not be used; the stored entity is untouched.
func (c *Codec[T]) DecodeContext(ctx context.Context, data []byte, v *T) error {
	if v == nil {
		return &DecodeError{Type: c.p.typeName, Reason: "nil destination"}
	}
	var zero T
	*v = zero
	return c.p.decode(ctx, data, unsafe.Pointer(v), c.reserved, c.enc)
}

// mergeRefused is the refusal of a merge (a write of some properties) of a type with
// encrypted fields.
func mergeRefused(typeName string) *InvalidInputError {
	return invalid(typeName, "(merge)", "a merge of an entity with encrypted properties is refused: its properties are "+
		"encrypted under one content key recorded in "+EncryptionMetadataProperty+", which a merge would overwrite or "+
		"leave stale, losing data (the Azure Table storage design guide, \"Encrypting table data\"); write the whole entity (insert, replace, upsert in Replace mode)")
}

// metaField writes the metadata property.
var metaField = &field{
	name:      EncryptionMetadataProperty,
	goName:    EncryptionMetadataProperty,
	key:       appendKey(nil, EncryptionMetadataProperty),
	nameBytes: 2 * len(EncryptionMetadataProperty),
}

// entitySealer is the encryption state of one entity being encoded.
type entitySealer struct {
	pk, rk  string
	cek     []byte
	aead    cipher.AEAD
	names   []string
	scratch []byte
	aad     []byte

	// For signing (newSealer): the entity's plan and value, and the Encryption.
	plan *plan
	base unsafe.Pointer
	x    *Encryption
}

// newSealer is newEntitySealer for an entity of p at base, encoded with x: the metadata
// then signs p's signed fields and binds x's Table, if any.
func (p *plan) newSealer(pk, rk string, base unsafe.Pointer, x *Encryption) *entitySealer {
	s := newEntitySealer(pk, rk)
	s.plan, s.base, s.x = p, base, x
	return s
}

func newEntitySealer(pk, rk string) *entitySealer {
	cek := newContentKey()
	aead, _ := newAEAD(cek) // a 32-byte key cannot be refused
	return &entitySealer{pk: pk, rk: rk, cek: cek, aead: aead}
}

// wipe clears the content key and the plaintext scratch once the entity is written.
func (s *entitySealer) wipe() {
	clear(s.cek)
	clear(s.scratch[:cap(s.scratch)])
}

// appendEncrypted renders f's value as the plaintext JSON value the plain encoder would
// write (checking the same limits), seals it, and writes it as Edm.Binary.
func (e *encoder) appendEncrypted(dst []byte, f *field, base unsafe.Pointer, s *entitySealer) ([]byte, *InvalidInputError) {
	plain := encoder{typeName: e.typeName}
	buf, err := plain.appendField(s.scratch[:0], f.plain, base)
	if err != nil {
		if err.Limit == 0 {
			// Any message of the plain encoder may quote the value (a time out of range, a
			// MarshalText or encoding/json error): only size errors, which name sizes, pass.
			err = invalid(e.typeName, f.goName, "the value of the encrypted field cannot be encoded (the encoder's message is withheld: it may quote the value)")
		}
		return dst, err
	}
	s.scratch = buf
	if len(buf) == 0 {
		return dst, nil // absent (nil pointer, omitempty): nothing to encrypt
	}
	s.aad = propertyAAD(s.aad[:0], s.pk, s.rk, f.name)
	ct := sealProperty(s.aead, s.aad, buf[1:]) // buf[0] is the separator
	if len(ct) > MaxBinaryBytes {
		return dst, tooLarge(e.typeName, f.goName, "encrypted property larger than 64 KiB of Edm.Binary (the plaintext JSON value plus 29 bytes)", len(ct), MaxBinaryBytes)
	}
	dst = e.begin(dst, f, 4+len(ct))
	s.names = append(s.names, f.name)
	return appendBase64(dst, ct), nil
}

// appendMetadata wraps the content key under kek and writes the metadata property.
func (e *encoder) appendMetadata(ctx context.Context, dst []byte, s *entitySealer, kek KeyEncryptionKey) ([]byte, error) {
	id := kek.KeyID()
	fail := func(reason string, err error) error {
		return &EncryptionError{Type: e.typeName, PartitionKey: s.pk, RowKey: s.rk, KeyID: id, Reason: reason, Err: err}
	}
	if err := validateKeyID(id); err != nil {
		return dst, err
	}
	wrapped, alg, err := kek.WrapKey(ctx, s.cek)
	if err != nil {
		return dst, fail("wrapping the content key failed", err)
	}
	if alg == "" || len(alg) > 255 || len(wrapped) == 0 || len(wrapped) > maxWrappedKeyBytes {
		return dst, fail("the key-encryption key returned an algorithm name of 1 to 255 bytes and a wrapped key of 1 to 1024 bytes", errors.New("out of the layout's bounds"))
	}
	m := &envMeta{keyID: id, alg: alg, wrapped: wrapped, names: s.names}
	if s.plan != nil && (len(s.plan.signed) > 0 || s.x.Table != "") {
		m.v2, m.bound, m.table = true, s.x.Table != "", s.x.boundTable()
		for _, f := range s.plan.signed {
			digest, ierr := signedDigest(s.plan.typeName, f, s.base)
			if ierr != nil {
				return dst, ierr
			}
			m.signed = append(m.signed, f.name)
			m.digests = append(m.digests, digest)
		}
	}
	meta := encodeMeta(s.aead, s.pk, s.rk, m)
	dst = e.beginAnnotated(dst, metaField, "Edm.Binary", 4+len(meta))
	return appendBase64(dst, meta), nil
}

// sealedProp is an encrypted property met while decoding, kept until the metadata is read.
type sealedProp struct {
	f   *field
	tok token
}

// decrypt opens the sealed properties of the entity at base and fills their fields, after
// authenticating the metadata. For a type without encrypted fields it only checks that no
// field of the type reads an encrypted property as if it were plaintext.
func (p *plan) decrypt(ctx context.Context, base unsafe.Pointer, x *Encryption, sealed []sealedProp, metaTok *token, hasMeta bool, unknown []pending) error {
	pk, rk := p.keys(base)
	fail := func(sentinel error, prop, keyID, reason string) error {
		return &EncryptionError{Type: p.typeName, Property: prop, PartitionKey: pk, RowKey: rk, KeyID: keyID, Reason: reason, Err: sentinel}
	}
	var m *envMeta
	var metaErr error
	if hasMeta {
		m, metaErr = readMeta(metaTok)
	}
	if p.encrypted == 0 {
		if m == nil {
			return nil // not ours to judge: passed through as binary by whoever reads it
		}
		return p.checkNoPlaintextReader(m, nil, pk, rk)
	}
	switch {
	case !hasMeta:
		return fail(ErrMissingKeyID, "", "", "the entity carries no "+EncryptionMetadataProperty+" (written without encryption, or the metadata was removed)")
	case errors.Is(metaErr, errMissingKeyID):
		return fail(ErrMissingKeyID, EncryptionMetadataProperty, "", "the encryption metadata names no key")
	case metaErr != nil:
		return fail(ErrTampered, EncryptionMetadataProperty, "", "the encryption metadata is malformed")
	}
	aead, err := openContentKey(ctx, x, m)
	if err != nil {
		return fail(err, "", m.keyID, reasonOf(err))
	}
	m.table = x.boundTable()
	if !verifyMeta(aead, pk, rk, m) {
		reason := "the encryption metadata failed authentication (altered, or moved from another entity)"
		if m.bound {
			reason = "the encryption metadata failed authentication (altered, moved from another entity, or from another table than Encryption.Table)"
		}
		return fail(ErrTampered, EncryptionMetadataProperty, m.keyID, reason)
	}
	if err := p.checkSigned(base, x, m); err != "" {
		return fail(ErrTampered, EncryptionMetadataProperty, m.keyID, err)
	}
	listed := make(map[string]bool, len(m.names))
	for _, n := range m.names {
		listed[n] = false
	}
	var aad, buf []byte
	for i := range sealed {
		sp := &sealed[i]
		name := sp.f.name
		if seen, ok := listed[name]; !ok || seen {
			return fail(ErrTampered, name, m.keyID, "the encrypted property is not listed in the entity's encryption metadata")
		}
		listed[name] = true
		if sp.tok.kind == vNull {
			return fail(ErrTampered, name, m.keyID, "the encrypted property was replaced by null")
		}
		var ct []byte
		ok := sp.tok.kind == vString
		if ok {
			ct, ok = binaryValue(sp.tok.text(buf[:0]))
		}
		if !ok {
			return fail(ErrTampered, name, m.keyID, "the encrypted property is not Edm.Binary (replaced by a plaintext value?)")
		}
		aad = propertyAAD(aad[:0], pk, rk, name)
		pt, err := openProperty(aead, aad, ct)
		if err != nil {
			return fail(ErrTampered, name, m.keyID, "the encrypted property failed authentication (altered, or moved from another entity or property)")
		}
		s := scanner{d: pt}
		tok, serr := s.value()
		if serr != nil || s.i != len(pt) {
			return &DecodeError{Type: p.typeName, Field: sp.f.goName, Property: name, Reason: "decrypted value is not a JSON value"}
		}
		if derr := p.setField(sp.f, base, &tok, nil); derr != nil {
			return withheld(derr, sp.f)
		}
	}
	for name, seen := range listed {
		if f := p.byName[name]; f != nil && f.encrypt && !seen {
			return fail(ErrTampered, name, m.keyID, "the encrypted property listed in the metadata is missing (removed)")
		}
	}
	return p.checkNoPlaintextReader(m, unknown, pk, rk)
}

// checkNoPlaintextReader refuses an entity whose encrypted properties the type would read
// without decrypting: a field without the encrypt option (it would receive ciphertext), or
// an extra map (a later Replace would write the ciphertext back next to a new content key,
// making it undecryptable).
func (p *plan) checkNoPlaintextReader(m *envMeta, unknown []pending, pk, rk string) error {
	for _, name := range m.names {
		if f := p.byName[name]; f != nil && !f.encrypt {
			return &DecodeError{Type: p.typeName, Field: f.goName, Property: name,
				Reason: "the property is stored encrypted (listed in " + EncryptionMetadataProperty + "): tag the field encrypt and configure Encryption"}
		}
		if p.extra != nil && p.byName[name] == nil && p.encrypted > 0 {
			for i := range unknown {
				if unknown[i].name == name {
					return &DecodeError{Type: p.typeName, Field: name, Property: name,
						Reason: "the entity has an encrypted property the type does not map; its extra field cannot carry it through a write (map it with the encrypt option)"}
				}
			}
		}
	}
	return nil
}

// readMeta decodes the metadata property's value (base64 of the layout).
func readMeta(t *token) (*envMeta, error) {
	if t.kind != vString {
		return nil, errMalformed
	}
	b, ok := binaryValue(t.text(nil))
	if !ok {
		return nil, errMalformed
	}
	return parseMeta(b)
}

// openContentKey resolves the key named by m and unwraps the content key. Its errors wrap
// ErrUnknownKey, ErrWrongKey, or the key's own error.
func openContentKey(ctx context.Context, x *Encryption, m *envMeta) (cipher.AEAD, error) {
	if x == nil {
		return nil, errNoEncryption
	}
	kek, err := x.resolve(ctx, m.keyID)
	if err != nil {
		return nil, err
	}
	cek, err := kek.UnwrapKey(ctx, m.wrapped, m.alg)
	if err != nil {
		return nil, err
	}
	defer clear(cek)
	if len(cek) != contentKeySize {
		return nil, errBadContentKey
	}
	return newAEAD(cek)
}

var (
	errNoEncryption  = &reasonError{"the codec has no Encryption (use WithEncryption or repo.Options.Encryption)", ErrUnknownKey}
	errBadContentKey = &reasonError{"the key unwrapped a content key of the wrong size", ErrWrongKey}
)

// reasonError is a sentinel with a specific reason.
type reasonError struct {
	reason string
	err    error
}

func (e *reasonError) Error() string { return e.reason }
func (e *reasonError) Unwrap() error { return e.err }

func reasonOf(err error) string {
	switch {
	case errors.Is(err, ErrUnknownKey):
		return "no key-encryption key with the entity's key id"
	case errors.Is(err, ErrWrongKey):
		return "the key-encryption key does not unwrap the entity's content key"
	}
	return "the key-encryption key failed"
}

// EncryptionKeyID returns the id of the key-encryption key under which e's properties are
// encrypted, read from its EncryptionMetadataProperty without any key; ok is false if e
// carries no (readable) encryption metadata.
func (e *Entity) EncryptionKeyID() (id string, ok bool) {
	b, isBytes := e.Properties[EncryptionMetadataProperty].([]byte)
	if !isBytes {
		return "", false
	}
	m, err := parseMeta(b)
	if err != nil {
		return "", false
	}
	return m.keyID, true
}

// Rewrap re-wraps the content key of the encrypted entity e under x.Key, in place: it
// replaces e's EncryptionMetadataProperty and nothing else, so the encrypted properties
// stay as they are (the content key does not change). This is key rotation: afterwards
// only x.Key is needed to read e. It reports false, and changes nothing, when e carries no
// encryption metadata or is already under x.Key.
//
// Writing the new metadata back alone (a merge of one property, conditional on e's ETag) is
// safe, unlike the merges Encode refuses: the content key is unchanged, and the ETag proves
// that no property changed since e was read. repo.Table.RotateKeys does exactly that.
//
// Errors: *InvalidInputError (x without Key); *EncryptionError wrapping ErrUnknownKey,
// ErrWrongKey, ErrTampered (the metadata failed authentication) or ErrMissingKeyID.
// e is unchanged on error.
func (x *Encryption) Rewrap(ctx context.Context, e *Entity) (bool, error) {
	if err := x.validate(); err != nil {
		return false, err
	}
	if x.Key == nil {
		return false, invalid("", "Encryption.Key", "is nil: rewrapping needs the new key")
	}
	raw, ok := e.Properties[EncryptionMetadataProperty]
	if !ok {
		return false, nil
	}
	fail := func(sentinel error, keyID, reason string) error {
		return &EncryptionError{Type: "codec.Entity", Property: EncryptionMetadataProperty, PartitionKey: e.PartitionKey, RowKey: e.RowKey, KeyID: keyID, Reason: reason, Err: sentinel}
	}
	b, isBytes := raw.([]byte)
	if !isBytes {
		return false, fail(ErrTampered, "", "the encryption metadata is not Edm.Binary")
	}
	m, err := parseMeta(b)
	switch {
	case errors.Is(err, errMissingKeyID):
		return false, fail(ErrMissingKeyID, "", "the encryption metadata names no key")
	case err != nil:
		return false, fail(ErrTampered, "", "the encryption metadata is malformed")
	}
	newID := x.Key.KeyID()
	if m.keyID == newID {
		return false, nil
	}
	kek, err := x.resolve(ctx, m.keyID)
	if err != nil {
		return false, fail(err, m.keyID, reasonOf(err))
	}
	cek, err := kek.UnwrapKey(ctx, m.wrapped, m.alg)
	if err != nil {
		return false, fail(err, m.keyID, reasonOf(err))
	}
	defer clear(cek)
	if len(cek) != contentKeySize {
		return false, fail(errBadContentKey, m.keyID, errBadContentKey.reason)
	}
	aead, _ := newAEAD(cek)
	m.table = x.boundTable()
	if !verifyMeta(aead, e.PartitionKey, e.RowKey, m) {
		return false, fail(ErrTampered, m.keyID, "the encryption metadata failed authentication")
	}
	wrapped, alg, err := x.Key.WrapKey(ctx, cek)
	if err != nil {
		return false, fail(err, newID, "wrapping the content key under the new key failed")
	}
	if alg == "" || len(alg) > 255 || len(wrapped) == 0 || len(wrapped) > maxWrappedKeyBytes {
		return false, fail(errors.New("out of the layout's bounds"), newID, "the new key returned an algorithm name or wrapped key outside the layout's limits")
	}
	e.Properties[EncryptionMetadataProperty] = encodeMeta(aead, e.PartitionKey, e.RowKey,
		m.withV2(&envMeta{keyID: newID, alg: alg, wrapped: wrapped, names: m.names}))
	return true, nil
}

// errWithheld stands in for the error of a decrypted value that does not fit its field:
// the original message (an overflow, an UnmarshalText or encoding/json error) may quote
// the value.
var errWithheld = errors.New("the decrypted value and the decoder's message are withheld")

// withheld rewrites the DecodeError of a decrypted value so that its text carries no part
// of the value: the values of encrypted fields never appear in error text.
func withheld(derr *DecodeError, f *field) *DecodeError {
	return &DecodeError{Type: derr.Type, Field: derr.Field, Property: derr.Property,
		Reason: "the decrypted value does not fit the field's type " + f.typ.String(), Err: errWithheld}
}

// signedDigest hashes the canonical value of the signed field f of the entity at base: its
// name and either "absent" or the JSON value the plain encoder writes for it. Decoding and
// encoding again gives the same value, so the digest does not depend on how the service
// spells a value it returns (an Int64 as a string, a whole double as an integer). The
// value is plaintext stored next to it, so its hash reveals nothing more.
func signedDigest(typeName string, f *field, base unsafe.Pointer) ([]byte, *InvalidInputError) {
	h := sha256.New()
	h.Write([]byte(signedDomain))
	h.Write(appendLP(nil, f.name))
	enc := encoder{typeName: typeName}
	buf, err := enc.appendField(nil, f.plain, base)
	if err != nil {
		return nil, err
	}
	if len(buf) == 0 {
		h.Write([]byte{0}) // absent
	} else {
		h.Write([]byte{1})
		h.Write(appendLP(nil, string(buf[1:]))) // buf[0] is the separator
	}
	return h.Sum(nil), nil
}

// checkSigned verifies the signed plaintext of a decoded entity against its authenticated
// metadata m, and the policy of x. It returns "" or the reason of ErrTampered. A signed
// property that the type does not map is not read, and not checked (a projection).
func (p *plan) checkSigned(base unsafe.Pointer, x *Encryption, m *envMeta) string {
	if x.RequireSignatures {
		if !m.v2 {
			// A version-1 entity signs nothing: a reader that requires signatures refuses
			// it whatever it maps, or a pre-signing copy written back over a signed entity
			// would pass a projection that maps no signed field.
			return "the entity carries no signatures (metadata version 1, written before signing), and RequireSignatures is set"
		}
		if x.Table != "" && !m.bound {
			return "the entity is not bound to Encryption.Table (written before binding, or by another codec), and RequireSignatures is set"
		}
		listed := make(map[string]bool, len(m.signed))
		for _, n := range m.signed {
			listed[n] = true
		}
		for _, f := range p.signed {
			if !listed[f.name] {
				return "the property " + f.name + " is not signed in this entity (written before signing), and RequireSignatures is set"
			}
		}
	}
	for i, n := range m.signed {
		f := p.byName[n]
		switch {
		case f == nil:
			continue
		case f.encrypt:
			return "the entity signs property " + n + " as plaintext, which this type encrypts"
		case f.plain == nil: // mapped, no longer tagged sign: still verified
			plain := *f
			plain.key, plain.annot = nil, nil
			f = &field{name: f.name, plain: &plain}
		}
		digest, err := signedDigest(p.typeName, f, base)
		if err != nil || !hmac.Equal(digest, m.digests[i]) {
			return "the signed property " + n + " was changed or removed since the entity was written"
		}
	}
	return ""
}
