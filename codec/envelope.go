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
	aadProperty = "tablepatterns/encrypt/v1/property\x00"
	aadMetadata = "tablepatterns/encrypt/v1/metadata\x00"
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

func metadataAAD(dst []byte, pk, rk string, body []byte) []byte {
	dst = append(dst, aadMetadata...)
	dst = appendLP(dst, pk)
	dst = appendLP(dst, rk)
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
	out := make([]byte, 0, n)
	out = append(out, envelopeVersion, cipherAESGCM, byte(len(m.keyID)))
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
	bodyLen := len(out)
	out = out[:bodyLen+nonceSize]
	_, _ = rand.Read(out[bodyLen:])
	aad := metadataAAD(make([]byte, 0, 64+len(pk)+len(rk)+bodyLen), pk, rk, out[:bodyLen])
	return aead.Seal(out, out[bodyLen:], nil, aad)
}

// parseMeta reads the layout without any key: what a resolver needs (the key id) and what
// is authenticated later (verifyMeta). It returns errMissingKeyID for an empty key id and
// errMalformed for anything else it cannot read.
func parseMeta(b []byte) (*envMeta, error) {
	r := reader{b: b}
	if r.u8() != envelopeVersion || r.u8() != cipherAESGCM {
		return nil, errMalformed
	}
	m := &envMeta{}
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
	aad := metadataAAD(make([]byte, 0, 64+len(pk)+len(rk)+len(m.body)), pk, rk, m.body)
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
