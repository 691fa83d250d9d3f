package codec

import (
	"context"
	"errors"
)

// Reencrypt re-encrypts the encrypted entity e under x.Key with a fresh content key, in
// place: every encrypted property listed in e's EncryptionMetadataProperty is decrypted
// with the old content key and sealed again under a new random one, which x.Key wraps into
// new metadata. Only those properties and the metadata change; plaintext properties are
// left as they are. It reports false, and changes nothing, when e carries no encryption
// metadata or is already under x.Key (written under it, and so with its own fresh content
// key, or re-encrypted earlier).
//
// Use it after a key-encryption key is compromised (see the package doc, "Rotation:
// re-wrap or re-encrypt"): whoever holds the old key and an earlier copy of e's metadata
// could still unwrap the old content key, and with Rewrap the ciphertexts stay under it.
// After Reencrypt they do not: the new ciphertexts are under a content key that the old
// key never wrapped. Re-encrypt to a key id that no entity carries yet; an entity already
// under x.Key is skipped.
//
// e must hold every property of the entity that its metadata lists (a full read, not a
// projection). The content keys and plaintexts are wiped before Reencrypt returns.
//
// Errors: *InvalidInputError (x without Key); *EncryptionError wrapping ErrUnknownKey,
// ErrWrongKey, ErrTampered (the metadata or a property failed authentication, or a listed
// property is missing) or ErrMissingKeyID. e is unchanged on error.
func (x *Encryption) Reencrypt(ctx context.Context, e *Entity) (bool, error) {
	if err := x.validate(); err != nil {
		return false, err
	}
	if x.Key == nil {
		return false, invalid("", "Encryption.Key", "is nil: re-encrypting needs the new key")
	}
	raw, ok := e.Properties[EncryptionMetadataProperty]
	if !ok {
		return false, nil
	}
	fail := func(sentinel error, prop, keyID, reason string) error {
		return &EncryptionError{Type: "codec.Entity", Property: prop, PartitionKey: e.PartitionKey, RowKey: e.RowKey, KeyID: keyID, Reason: reason, Err: sentinel}
	}
	b, isBytes := raw.([]byte)
	if !isBytes {
		return false, fail(ErrTampered, EncryptionMetadataProperty, "", "the encryption metadata is not Edm.Binary")
	}
	m, err := parseMeta(b)
	switch {
	case errors.Is(err, errMissingKeyID):
		return false, fail(ErrMissingKeyID, EncryptionMetadataProperty, "", "the encryption metadata names no key")
	case err != nil:
		return false, fail(ErrTampered, EncryptionMetadataProperty, "", "the encryption metadata is malformed")
	}
	newID := x.Key.KeyID()
	if m.keyID == newID {
		return false, nil
	}
	if err := validateKeyID(newID); err != nil {
		return false, err
	}
	kek, err := x.resolve(ctx, m.keyID)
	if err != nil {
		return false, fail(err, "", m.keyID, reasonOf(err))
	}
	oldCEK, err := kek.UnwrapKey(ctx, m.wrapped, m.alg)
	if err != nil {
		return false, fail(err, "", m.keyID, reasonOf(err))
	}
	defer clear(oldCEK)
	if len(oldCEK) != contentKeySize {
		return false, fail(errBadContentKey, "", m.keyID, errBadContentKey.reason)
	}
	oldAEAD, _ := newAEAD(oldCEK)
	m.table = x.boundTable()
	if !verifyMeta(oldAEAD, e.PartitionKey, e.RowKey, m) {
		return false, fail(ErrTampered, EncryptionMetadataProperty, m.keyID, "the encryption metadata failed authentication")
	}

	s := newEntitySealer(e.PartitionKey, e.RowKey)
	defer s.wipe()
	sealed := make(map[string][]byte, len(m.names))
	var aad []byte
	for _, name := range m.names {
		ct, ok := e.Properties[name].([]byte)
		if !ok {
			return false, fail(ErrTampered, name, m.keyID, "the encrypted property listed in the metadata is missing or not Edm.Binary")
		}
		aad = propertyAAD(aad[:0], e.PartitionKey, e.RowKey, name)
		pt, err := openProperty(oldAEAD, aad, ct)
		if err != nil {
			return false, fail(ErrTampered, name, m.keyID, "the encrypted property failed authentication (altered, or moved from another entity or property)")
		}
		sealed[name] = sealProperty(s.aead, aad, pt)
		clear(pt)
		s.names = append(s.names, name)
	}
	wrapped, alg, err := x.Key.WrapKey(ctx, s.cek)
	if err != nil {
		return false, fail(err, "", newID, "wrapping the new content key failed")
	}
	if alg == "" || len(alg) > 255 || len(wrapped) == 0 || len(wrapped) > maxWrappedKeyBytes {
		return false, fail(errors.New("out of the layout's bounds"), "", newID, "the new key returned an algorithm name or wrapped key outside the layout's limits")
	}
	for name, ct := range sealed {
		e.Properties[name] = ct
	}
	e.Properties[EncryptionMetadataProperty] = encodeMeta(s.aead, e.PartitionKey, e.RowKey,
		m.withV2(&envMeta{keyID: newID, alg: alg, wrapped: wrapped, names: s.names}))
	return true, nil
}

// EncryptedProperties returns the names of the encrypted properties listed in e's
// EncryptionMetadataProperty, read without any key (nil if e carries no readable
// metadata). The list is not authenticated by this call: use it to know which properties
// to write after Reencrypt, never to decide what to trust.
func EncryptedProperties(e *Entity) []string {
	b, ok := e.Properties[EncryptionMetadataProperty].([]byte)
	if !ok {
		return nil
	}
	m, err := parseMeta(b)
	if err != nil {
		return nil
	}
	return m.names
}
