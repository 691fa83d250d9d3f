package codec

import (
	"crypto/cipher"
	"crypto/subtle"
	"encoding/binary"
)

// AES Key Wrap (RFC 3394), the "A256KW" algorithm of JSON Web Algorithms (RFC 7518) and of
// Azure Key Vault's symmetric keys: it encrypts a key of n 64-bit blocks into n+1 blocks
// with a built-in integrity check, so that unwrapping with another key fails instead of
// returning garbage. It is deterministic, which is fine for wrapping random keys.

// keyWrapIV is the default initial value of RFC 3394, section 2.2.3.1.
var keyWrapIV = [8]byte{0xA6, 0xA6, 0xA6, 0xA6, 0xA6, 0xA6, 0xA6, 0xA6}

// aesKeyWrap wraps plaintext (a multiple of 8 bytes, at least 16) under the AES key of
// block.
func aesKeyWrap(block cipher.Block, plaintext []byte) []byte {
	n := len(plaintext) / 8
	out := make([]byte, 8*(n+1))
	copy(out[8:], plaintext)
	var a [8]byte = keyWrapIV
	var buf [16]byte
	for j := 0; j < 6; j++ {
		for i := 1; i <= n; i++ {
			copy(buf[:8], a[:])
			copy(buf[8:], out[8*i:8*i+8])
			block.Encrypt(buf[:], buf[:])
			t := uint64(n*j + i)
			binary.BigEndian.PutUint64(a[:], binary.BigEndian.Uint64(buf[:8])^t)
			copy(out[8*i:8*i+8], buf[8:])
		}
	}
	copy(out[:8], a[:])
	return out
}

// aesKeyUnwrap reverses aesKeyWrap. ok is false when the integrity check fails: the
// ciphertext was wrapped under another key, or altered.
func aesKeyUnwrap(block cipher.Block, ciphertext []byte) (plaintext []byte, ok bool) {
	if len(ciphertext)%8 != 0 || len(ciphertext) < 24 {
		return nil, false
	}
	n := len(ciphertext)/8 - 1
	out := make([]byte, 8*n)
	copy(out, ciphertext[8:])
	var a [8]byte
	copy(a[:], ciphertext[:8])
	var buf [16]byte
	for j := 5; j >= 0; j-- {
		for i := n; i >= 1; i-- {
			t := uint64(n*j + i)
			binary.BigEndian.PutUint64(buf[:8], binary.BigEndian.Uint64(a[:])^t)
			copy(buf[8:], out[8*(i-1):8*i])
			block.Decrypt(buf[:], buf[:])
			copy(a[:], buf[:8])
			copy(out[8*(i-1):8*i], buf[8:])
		}
	}
	if subtle.ConstantTimeCompare(a[:], keyWrapIV[:]) != 1 {
		clear(out)
		return nil, false
	}
	return out, true
}
