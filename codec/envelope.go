package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"unicode/utf8"
)

// The stored layout of client-side encryption, version 1. It is documented in doc.go
// ("Encryption"); this file is its only reader and writer.

const (
	contentKeySize  = 32 // AES-256
	envelopeVersion = 1
	cipherAESGCM    = 1 // AES-256-GCM, 12-byte nonce, 16-byte tag
	nonceSize       = 12
	tagSize         = 16
	// propertyOverheadBytes is what encryption adds to a property's plaintext.
	propertyOverheadBytes = 1 + nonceSize + tagSize
	maxWrappedKeyBytes    = 1024
)

// Domain separation of the additional authenticated data: a property's ciphertext can never
// pass for the metadata's tag or the other way round.
const (
	aadProperty   = "tablepatterns/encrypt/v1/property\x00"
	aadMetadata   = "tablepatterns/encrypt/v1/metadata\x00"
	aadMetadataV2 = "tablepatterns/encrypt/v2/metadata\x00"
	signedDomain  = "tablepatterns/sign/v1\x00"
)

// metadataV2 is the metadata format version of entities with signed properties or a bound
// table; version 1 (envelopeVersion) stays what every other entity carries, and both are
// read.
const (
	metadataV2      = 2
	flagTableBound  = 1 // the table name is part of the metadata's authenticated data
	signedDigestLen = 32
)

// envMeta is the parsed encryption metadata of one entity.
type envMeta struct {
	keyID   string
	alg     string
	wrapped []byte
	names   []string // the encrypted properties present, in the order written
	body    []byte   // the encoded form up to the nonce (authenticated)
	nonce   []byte
	tag     []byte

	// Version 2 only (v2 reports it): signed plaintext and table binding.
	v2      bool
	bound   bool     // the table name is authenticated
	signed  []string // the signed plaintext properties
	digests [][]byte // SHA-256 of each signed property's canonical value (signedDigest)
	table   string   // not stored: the table name the reader or writer binds (lowercase)
}

// withV2 copies the version 2 fields of m into out (a rotation keeps them).
func (m *envMeta) withV2(out *envMeta) *envMeta {
	out.v2, out.bound, out.signed, out.digests, out.table = m.v2, m.bound, m.signed, m.digests, m.table
	return out
}

// appendLP appends a length-prefixed (uvarint) string: the binding of keys and names in
// the AAD is unambiguous whatever characters they hold.
func appendLP(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func propertyAAD(dst []byte, pk, rk, name string) []byte {
	dst = append(dst, aadProperty...)
	dst = appendLP(dst, pk)
	dst = appendLP(dst, rk)
	return appendLP(dst, name)
}

func metadataAAD(dst []byte, pk, rk string, m *envMeta, body []byte) []byte {
	if !m.v2 {
		dst = append(dst, aadMetadata...)
		dst = appendLP(dst, pk)
		dst = appendLP(dst, rk)
		return append(dst, body...)
	}
	dst = append(dst, aadMetadataV2...)
	dst = appendLP(dst, pk)
	dst = appendLP(dst, rk)
	if m.bound {
		dst = appendLP(dst, m.table)
	}
	return append(dst, body...)
}

func newAEAD(cek []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sealProperty returns version | nonce | ciphertext+tag of plaintext, bound to the entity's
// keys and the property name.
func sealProperty(aead cipher.AEAD, aad []byte, plaintext []byte) []byte {
	out := make([]byte, 1+nonceSize, 1+nonceSize+len(plaintext)+tagSize)
	out[0] = envelopeVersion
	_, _ = rand.Read(out[1 : 1+nonceSize]) // crypto/rand.Read never fails (Go 1.24+)
	return aead.Seal(out, out[1:1+nonceSize], plaintext, aad)
}

var errMalformed = errors.New("malformed")

// openProperty authenticates and decrypts a sealed property.
func openProperty(aead cipher.AEAD, aad, sealed []byte) ([]byte, error) {
	if len(sealed) < propertyOverheadBytes || sealed[0] != envelopeVersion {
		return nil, errMalformed
	}
	return aead.Open(nil, sealed[1:1+nonceSize], sealed[1+nonceSize:], aad)
}

// encodeMeta lays out the metadata body and signs it with the content key.
func encodeMeta(aead cipher.AEAD, pk, rk string, m *envMeta) []byte {
	n := 3 + len(m.keyID) + 1 + len(m.alg) + 2 + len(m.wrapped) + 2 + nonceSize + tagSize
	for _, name := range m.names {
		n += 2 + len(name)
	}
	version := byte(envelopeVersion)
	if m.v2 {
		version = metadataV2
		n += 1 + 2
		for _, name := range m.signed {
			n += 2 + len(name) + signedDigestLen
		}
	}
	out := make([]byte, 0, n)
	out = append(out, version, cipherAESGCM, byte(len(m.keyID)))
	out = append(out, m.keyID...)
	out = append(out, byte(len(m.alg)))
	out = append(out, m.alg...)
	out = binary.BigEndian.AppendUint16(out, uint16(len(m.wrapped)))
	out = append(out, m.wrapped...)
	out = binary.BigEndian.AppendUint16(out, uint16(len(m.names)))
	for _, name := range m.names {
		out = binary.BigEndian.AppendUint16(out, uint16(len(name)))
		out = append(out, name...)
	}
	if m.v2 {
		var flags byte
		if m.bound {
			flags |= flagTableBound
		}
		out = append(out, flags)
		out = binary.BigEndian.AppendUint16(out, uint16(len(m.signed)))
		for i, name := range m.signed {
			out = binary.BigEndian.AppendUint16(out, uint16(len(name)))
			out = append(out, name...)
			out = append(out, m.digests[i]...)
		}
	}
	bodyLen := len(out)
	out = out[:bodyLen+nonceSize]
	_, _ = rand.Read(out[bodyLen:])
	aad := metadataAAD(make([]byte, 0, 64+len(pk)+len(rk)+len(m.table)+bodyLen), pk, rk, m, out[:bodyLen])
	return aead.Seal(out, out[bodyLen:], nil, aad)
}

// parseMeta reads the layout without any key: what a resolver needs (the key id) and what
// is authenticated later (verifyMeta). It returns errMissingKeyID for an empty key id and
// errMalformed for anything else it cannot read.
func parseMeta(b []byte) (*envMeta, error) {
	r := reader{b: b}
	version := r.u8()
	if (version != envelopeVersion && version != metadataV2) || r.u8() != cipherAESGCM {
		return nil, errMalformed
	}
	m := &envMeta{v2: version == metadataV2}
	m.keyID = string(r.bytes(int(r.u8())))
	m.alg = string(r.bytes(int(r.u8())))
	m.wrapped = r.bytes(int(r.u16()))
	count := int(r.u16())
	if r.bad || count > MaxProperties {
		return nil, errMalformed
	}
	m.names = make([]string, 0, count)
	for i := 0; i < count; i++ {
		name := r.bytes(int(r.u16()))
		if r.bad || !utf8.Valid(name) {
			return nil, errMalformed
		}
		m.names = append(m.names, string(name))
	}
	if m.v2 {
		flags := r.u8()
		m.bound = flags&flagTableBound != 0
		count := int(r.u16())
		if r.bad || flags&^flagTableBound != 0 || count > MaxProperties {
			return nil, errMalformed
		}
		for i := 0; i < count; i++ {
			name := r.bytes(int(r.u16()))
			if r.bad || !utf8.Valid(name) {
				return nil, errMalformed
			}
			m.signed = append(m.signed, string(name))
			m.digests = append(m.digests, r.bytes(signedDigestLen))
		}
	}
	bodyLen := r.i
	m.nonce = r.bytes(nonceSize)
	m.tag = r.bytes(tagSize)
	if r.bad || r.i != len(b) || !utf8.ValidString(m.keyID) || len(m.wrapped) == 0 {
		return nil, errMalformed
	}
	m.body = b[:bodyLen]
	if m.keyID == "" {
		return m, errMissingKeyID
	}
	return m, nil
}

var errMissingKeyID = errors.New("no key id")

// verifyMeta authenticates the metadata with the content key and the entity's keys.
func verifyMeta(aead cipher.AEAD, pk, rk string, m *envMeta) bool {
	aad := metadataAAD(make([]byte, 0, 64+len(pk)+len(rk)+len(m.table)+len(m.body)), pk, rk, m, m.body)
	sealed := make([]byte, 0, tagSize)
	sealed = append(sealed, m.tag...)
	_, err := aead.Open(nil, m.nonce, sealed, aad)
	return err == nil
}

// reader reads the metadata layout; a short read sets bad and yields zero values.
type reader struct {
	b   []byte
	i   int
	bad bool
}

func (r *reader) bytes(n int) []byte {
	if r.bad || n < 0 || len(r.b)-r.i < n {
		r.bad = true
		return nil
	}
	out := r.b[r.i : r.i+n]
	r.i += n
	return out
}

func (r *reader) u8() byte {
	b := r.bytes(1)
	if b == nil {
		return 0
	}
	return b[0]
}

func (r *reader) u16() uint16 {
	b := r.bytes(2)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint16(b)
}

// newContentKey returns a fresh random content key.
func newContentKey() []byte {
	k := make([]byte, contentKeySize)
	_, _ = rand.Read(k)
	return k
}
