package codec

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strings"
	"sync"
)

// BlindIndex computes lookup values for encrypted properties: an HMAC-SHA256 of the
// normalized plaintext under a key of its own (never the key-encryption key), hex-encoded.
// Store it in a plain property or use it as the value of a secondary index (patterns/
// secondaryindex: Index.Value returns ix.Sum(e.Email)); a lookup computes Sum of the value
// searched for and queries for that. Encryption itself cannot serve lookups: every write
// encrypts under a fresh random key, so equal plaintexts never give equal ciphertexts.
//
// # Privacy trade-off
//
// A blind index is deterministic by design, so it reveals what any exact-match index
// reveals, to anyone who can read the table:
//
//   - Equality: entities with the same (normalized) value have the same index value, so
//     the number of entities per value and which entities share one are visible.
//   - Guessing: whoever holds the index key can test guesses offline; without it, nobody
//     can. Keep the index key as secret as the key-encryption key, and separate from it.
//   - Small domains: for values with few possibilities (a birth year, a yes/no), equality
//     alone is close to the plaintext for an observer who knows the distribution. Do not
//     blind-index such values; index them only if that disclosure is acceptable.
//
// Truncating the output (BlindIndexOptions.Bytes) makes distinct values collide on
// purpose, so that an index value no longer identifies one plaintext (k-anonymity): a
// lookup then returns a few candidates that the caller filters after decrypting. 16 bytes
// (the default) make collisions negligible; 2 to 4 bytes make them common.
//
// It supports exact matches only: no ranges, no prefixes, no ordering.
type BlindIndex struct {
	name      string
	size      int
	normalize func(string) string
	pool      sync.Pool // of hash.Hash keyed with the index key
}

// BlindIndexOptions configures NewBlindIndex. nil means the zero value.
type BlindIndexOptions struct {
	// Normalize maps a value to its canonical form before hashing, so that values a user
	// considers equal find each other. Defaults to strings.TrimSpace then strings.ToLower
	// (e-mail addresses, user names). Supply Unicode normalization (NFC) here if values
	// may arrive composed differently.
	Normalize func(string) string
	// Bytes is the length of the HMAC kept, 2 to 32. Defaults to 16 (32 hex digits).
	Bytes int
}

// NewBlindIndex returns the blind index named name (it separates indexes that share a
// key: the same value gives unrelated results under two names) keyed with key, at least 16
// random bytes (32 recommended) kept secret and apart from the key-encryption keys.
//
// It returns an *InvalidInputError for an empty name, a key shorter than 16 bytes, or
// Bytes out of range.
func NewBlindIndex(name string, key []byte, opts *BlindIndexOptions) (*BlindIndex, error) {
	var o BlindIndexOptions
	if opts != nil {
		o = *opts
	}
	if name == "" {
		return nil, invalid("", "BlindIndex name", "is empty")
	}
	if len(key) < 16 {
		return nil, tooLarge("", "BlindIndex key", "must be at least 16 random bytes (32 recommended)", len(key), 16)
	}
	if o.Bytes == 0 {
		o.Bytes = 16
	}
	if o.Bytes < 2 || o.Bytes > sha256.Size {
		return nil, tooLarge("", "BlindIndexOptions.Bytes", "must be 2 to 32", o.Bytes, sha256.Size)
	}
	if o.Normalize == nil {
		o.Normalize = func(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
	}
	k := append([]byte(nil), key...)
	b := &BlindIndex{name: name, size: o.Bytes, normalize: o.Normalize}
	b.pool.New = func() any { return hmac.New(sha256.New, k) }
	return b, nil
}

// Sum returns the index value of value: lowercase hex of the first Bytes bytes of
// HMAC-SHA256(key, "tablepatterns/blindindex/v1" 0x00 name 0x00 Normalize(value)). It is
// valid in a PartitionKey or RowKey and sorts like any hex string. It is safe for
// concurrent use.
func (b *BlindIndex) Sum(value string) string {
	h := b.pool.Get().(hash.Hash)
	h.Reset()
	h.Write([]byte("tablepatterns/blindindex/v1\x00"))
	h.Write([]byte(b.name))
	h.Write([]byte{0})
	h.Write([]byte(b.normalize(value)))
	var sum [sha256.Size]byte
	mac := h.Sum(sum[:0])
	b.pool.Put(h)
	return hex.EncodeToString(mac[:b.size])
}

// String names the index without its key.
func (b *BlindIndex) String() string { return "codec.BlindIndex(" + b.name + ")" }
