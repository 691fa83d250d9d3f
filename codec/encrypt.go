package codec

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// EncryptionMetadataProperty is the property an encrypting codec adds to every entity of a
// type with encrypted fields: the key id, the wrapped content key and the list of encrypted
// properties, authenticated (see the package doc, "Encryption"). A type with encrypted
// fields may not use this name for a field of its own.
const EncryptionMetadataProperty = "_EncryptionMetadata"

// The sentinels of client-side encryption. Every *EncryptionError unwraps to exactly one.
var (
	// ErrUnknownKey: the entity names a key-encryption key that the resolver does not know
	// (or the codec has no resolver at all). Add the key to the resolver: nothing is lost.
	ErrUnknownKey = errors.New("tablepatterns: unknown key-encryption key")
	// ErrWrongKey: the resolver returned a key for the entity's key id, but it does not
	// unwrap the entity's content key: two different keys carry the same id.
	ErrWrongKey = errors.New("tablepatterns: wrong key-encryption key (key id matches, key material does not)")
	// ErrTampered: an encrypted property or the encryption metadata failed authentication:
	// altered, moved from another entity or property, removed, or replaced by plaintext.
	ErrTampered = errors.New("tablepatterns: encrypted data failed authentication (tampered, moved or removed)")
	// ErrMissingKeyID: an entity of a type with encrypted fields carries no encryption
	// metadata, or metadata without a key id, so no key can be chosen to decrypt it.
	ErrMissingKeyID = errors.New("tablepatterns: entity carries no key id for its encrypted properties")
)

// EncryptionError reports an entity whose encrypted properties could not be encrypted or
// decrypted. It unwraps to one of ErrUnknownKey, ErrWrongKey, ErrTampered or
// ErrMissingKeyID, or to the error a KeyEncryptionKey or KeyResolver returned. Decoding
// never changes the stored entity: fix the key configuration and read it again.
type EncryptionError struct {
	// Type is the Go type being encoded or decoded ("" for dynamic entities).
	Type string
	// Property is the encrypted property concerned ("" for the entity as a whole).
	Property string
	// PartitionKey and RowKey identify the entity.
	PartitionKey, RowKey string
	// KeyID is the key-encryption key named by the entity ("" if none).
	KeyID string
	// Reason says what went wrong, in words.
	Reason string
	// Err is the sentinel (or the key's own error).
	Err error
}

// Error implements error. It never contains key material or plaintext.
func (e *EncryptionError) Error() string {
	var b strings.Builder
	b.WriteString("tablepatterns: encryption")
	if e.Type != "" {
		b.WriteString(": ")
		b.WriteString(e.Type)
	}
	fmt.Fprintf(&b, ": entity (PartitionKey=%q, RowKey=%q)", e.PartitionKey, e.RowKey)
	if e.Property != "" {
		fmt.Fprintf(&b, ", property %q", e.Property)
	}
	if e.KeyID != "" {
		fmt.Fprintf(&b, ", key %q", e.KeyID)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the sentinel or the key's error.
func (e *EncryptionError) Unwrap() error { return e.Err }

// KeyEncryptionKey (KEK) wraps and unwraps the random content keys that encrypt entities
// (envelope encryption). The KEK itself never leaves its holder: a LocalKey in memory, or
// a key in Azure Key Vault or another KMS behind an implementation of this interface.
//
// Implementations must be safe for concurrent use. A remote implementation is called once
// per entity written and once per entity read; cache what it can (see the package doc).
type KeyEncryptionKey interface {
	// KeyID names the key. It is stored with every entity the key encrypts, so that a
	// reader (KeyResolver) finds the key again after rotations: 1 to 255 bytes of UTF-8,
	// and a given id must always name the same key material.
	KeyID() string
	// WrapKey encrypts a 32-byte content key and names the algorithm it used (stored too,
	// at most 255 bytes, e.g. "A256KW" or "RSA-OAEP-256").
	WrapKey(ctx context.Context, contentKey []byte) (wrapped []byte, algorithm string, err error)
	// UnwrapKey decrypts a content key wrapped by WrapKey. It returns an error wrapping
	// ErrWrongKey when the wrapped key was not produced by this key material.
	UnwrapKey(ctx context.Context, wrapped []byte, algorithm string) (contentKey []byte, err error)
}

// KeyResolver finds the key-encryption key named by a stored entity.
//
// The key id comes from storage and is untrusted: whoever can write the entity chose it.
// Resolve it against an allowlist of keys the resolver already holds (as Keyring does)
// and return ErrUnknownKey for anything else; never build a vault client, a URL, a path
// or a key version from a stored id (see the package doc, "Encryption").
type KeyResolver interface {
	// ResolveKey returns the key with this id, or an error wrapping ErrUnknownKey.
	ResolveKey(ctx context.Context, keyID string) (KeyEncryptionKey, error)
}

// Encryption configures client-side encryption of the properties tagged "encrypt". Pass it
// to Codec.WithEncryption (or repo.Options.Encryption). It is safe for concurrent use once
// built; do not change it afterwards.
type Encryption struct {
	// Key encrypts every entity written. Required for writing; a reader that never writes
	// may leave it nil and set Resolver only.
	Key KeyEncryptionKey
	// Resolver finds the key named by an entity being read, so that entities written under
	// earlier keys stay readable after a rotation. nil resolves Key's id to Key only.
	Resolver KeyResolver
	// Table, if set, binds every entity written to this table: the name (compared without
	// case, like the service) joins the authenticated data of the encryption metadata, so
	// an entity copied or moved to another table fails to read there with ErrTampered.
	// Readers and rotations of a bound entity must set the same Table. Leave it empty for
	// entities that patterns move between tables verbatim (archives). Defaults to "" (not
	// bound).
	Table string
	// RequireSignatures, if set, refuses with ErrTampered an entity of a type with signed
	// fields (the sign option) whose metadata does not sign every one of them, and, with
	// Table set, one not bound to Table: entities written before signing (or binding) was
	// adopted are read without those checks otherwise. Set it once every entity has been
	// rewritten through the signing codec. Defaults to false.
	RequireSignatures bool
}

func (e *Encryption) validate() error {
	if e == nil {
		return invalid("", "Encryption", "is nil")
	}
	if e.Key == nil && e.Resolver == nil {
		return invalid("", "Encryption", "has neither a Key (to write) nor a Resolver (to read)")
	}
	if e.Key != nil {
		if err := validateKeyID(e.Key.KeyID()); err != nil {
			return err
		}
	}
	if e.Table != "" {
		if err := ValidateTableName(e.Table); err != nil {
			return invalid("", "Encryption.Table", "is not a valid table name")
		}
	}
	return nil
}

// boundTable is the table name entities are bound to, in the case the signature uses.
func (e *Encryption) boundTable() string { return strings.ToLower(e.Table) }

func validateKeyID(id string) *InvalidInputError {
	if id == "" {
		return invalid("", "Encryption.Key", "KeyID is empty: every entity records its key id so that keys can rotate")
	}
	if len(id) > 255 || !utf8.ValidString(id) {
		return tooLarge("", "Encryption.Key", "KeyID must be 1 to 255 bytes of UTF-8", len(id), 255)
	}
	return nil
}

// resolve finds the key for id: Key itself if the ids match, else the Resolver.
func (e *Encryption) resolve(ctx context.Context, id string) (KeyEncryptionKey, error) {
	if e.Key != nil && e.Key.KeyID() == id {
		return e.Key, nil
	}
	if e.Resolver == nil {
		return nil, ErrUnknownKey
	}
	k, err := e.Resolver.ResolveKey(ctx, id)
	if err != nil {
		return nil, err
	}
	if k == nil {
		return nil, ErrUnknownKey
	}
	return k, nil
}

// Keyring is a KeyResolver over a fixed set of keys: the current key and the earlier ones
// whose entities may not be rotated yet.
type Keyring struct {
	keys map[string]KeyEncryptionKey
}

// NewKeyring returns a resolver for keys. It returns an *InvalidInputError for a nil key,
// an invalid key id, or two keys with the same id.
func NewKeyring(keys ...KeyEncryptionKey) (*Keyring, error) {
	r := &Keyring{keys: make(map[string]KeyEncryptionKey, len(keys))}
	for i, k := range keys {
		if k == nil {
			return nil, invalid("", "Keyring", fmt.Sprintf("key %d is nil", i))
		}
		if err := validateKeyID(k.KeyID()); err != nil {
			return nil, err
		}
		if _, dup := r.keys[k.KeyID()]; dup {
			return nil, invalid("", "Keyring", "two keys have the id "+fmt.Sprintf("%q", k.KeyID()))
		}
		r.keys[k.KeyID()] = k
	}
	return r, nil
}

// ResolveKey implements KeyResolver. It returns an error wrapping ErrUnknownKey for an id
// it does not hold.
func (r *Keyring) ResolveKey(_ context.Context, keyID string) (KeyEncryptionKey, error) {
	if k, ok := r.keys[keyID]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("keyring has no key %q: %w", keyID, ErrUnknownKey)
}

// LocalKeyAlgorithm is the wrapping algorithm of LocalKey: AES Key Wrap with a 256-bit
// key (RFC 3394), named as in JSON Web Algorithms and Azure Key Vault.
const LocalKeyAlgorithm = "A256KW"

// LocalKey is a key-encryption key held in memory: 32 bytes of AES-256 that wrap content
// keys with AES Key Wrap (RFC 3394, "A256KW"). Load the bytes from a secret store; never
// from source code or logs. Its String and GoString methods never print the key.
type LocalKey struct {
	id    string
	block cipher.Block // AES-256 with the key schedule computed once; safe for concurrent use
}

// NewLocalKey returns a LocalKey named id holding a copy of key, which must be 32 bytes
// (generate it with crypto/rand). It returns an *InvalidInputError for another length or
// an invalid id.
func NewLocalKey(id string, key []byte) (*LocalKey, error) {
	if err := validateKeyID(id); err != nil {
		err.Field = "LocalKey id"
		return nil, err
	}
	if len(key) != 32 {
		return nil, tooLarge("", "LocalKey", "an AES-256 key-encryption key has exactly 32 bytes", len(key), 32)
	}
	block, err := aes.NewCipher(key) // copies the key into its schedule
	if err != nil {
		return nil, err
	}
	return &LocalKey{id: id, block: block}, nil
}

// KeyID implements KeyEncryptionKey.
func (k *LocalKey) KeyID() string { return k.id }

// WrapKey implements KeyEncryptionKey with AES Key Wrap.
func (k *LocalKey) WrapKey(_ context.Context, contentKey []byte) ([]byte, string, error) {
	if len(contentKey) != contentKeySize {
		return nil, "", fmt.Errorf("LocalKey: content key must be %d bytes, got %d", contentKeySize, len(contentKey))
	}
	return aesKeyWrap(k.block, contentKey), LocalKeyAlgorithm, nil
}

// UnwrapKey implements KeyEncryptionKey. It returns an error wrapping ErrWrongKey when
// the integrity check of the key wrap fails (the content key was wrapped by another key),
// and an error for an algorithm other than LocalKeyAlgorithm.
func (k *LocalKey) UnwrapKey(_ context.Context, wrapped []byte, algorithm string) ([]byte, error) {
	if algorithm != LocalKeyAlgorithm {
		return nil, fmt.Errorf("LocalKey unwraps %s only, not %q: %w", LocalKeyAlgorithm, algorithm, ErrWrongKey)
	}
	cek, ok := aesKeyUnwrap(k.block, wrapped)
	if !ok {
		return nil, fmt.Errorf("AES key wrap integrity check failed: %w", ErrWrongKey)
	}
	return cek, nil
}

// String names the key without its material. It has a value receiver so that printing a
// LocalKey value, not only a pointer, cannot reveal the key.
func (k LocalKey) String() string { return "codec.LocalKey(" + k.id + ")" }

// GoString names the key without its material (for %#v).
func (k LocalKey) GoString() string { return k.String() }
