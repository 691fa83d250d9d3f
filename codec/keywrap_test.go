package codec

import (
	"bytes"
	"crypto/aes"
	"encoding/hex"
	"strings"
	"testing"
)

// The vectors of RFC 3394, section 4 (256-bit KEK), copied from the RFC text.
func TestAESKeyWrapRFC3394Vectors(t *testing.T) {
	h := func(s string) []byte {
		b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	kekBytes := h("000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F")
	kek, _ := aes.NewCipher(kekBytes)
	for _, tc := range []struct{ name, data, wrapped string }{
		{"4.3 128 bits", "00112233445566778899AABBCCDDEEFF", "64E8C3F9CE0F5BA2 63E9777905818A2A 93C8191E7D6E8AE7"},
		{"4.5 192 bits", "00112233445566778899AABBCCDDEEFF0001020304050607", "A8F9BC1612C68B3F F6E6F4FBE30E71E4 769C8B80A32CB895 8CD5D17D6B254DA1"},
		{"4.6 256 bits", "00112233445566778899AABBCCDDEEFF000102030405060708090A0B0C0D0E0F",
			"28C9F404C4B810F4 CBCCB35CFB87F826 3F5786E2D80ED326 CBC7F0E71A99F43B FB988B9B7A02DD21"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := aesKeyWrap(kek, h(tc.data))
			if !bytes.Equal(got, h(tc.wrapped)) {
				t.Fatalf("wrap = %X; want %s", got, tc.wrapped)
			}
			back, ok := aesKeyUnwrap(kek, got)
			if !ok || !bytes.Equal(back, h(tc.data)) {
				t.Fatalf("unwrap = %X, %v", back, ok)
			}
			// Any flipped bit, and any other key, fails the integrity check.
			bad := append([]byte(nil), got...)
			bad[len(bad)-1] ^= 1
			if _, ok := aesKeyUnwrap(kek, bad); ok {
				t.Fatal("altered wrapped key unwrapped")
			}
			otherBytes := append([]byte(nil), kekBytes...)
			otherBytes[0] ^= 0x80
			other, _ := aes.NewCipher(otherBytes)
			if _, ok := aesKeyUnwrap(other, got); ok {
				t.Fatal("wrapped key unwrapped under another key")
			}
		})
	}
	for _, n := range []int{0, 8, 16, 17} {
		if _, ok := aesKeyUnwrap(kek, make([]byte, n)); ok {
			t.Fatalf("unwrap of %d bytes succeeded", n)
		}
	}
}

func FuzzParseMeta(f *testing.F) {
	aead, _ := newAEAD(make([]byte, 32))
	f.Add(encodeMeta(aead, "pk", "rk", &envMeta{keyID: "k1", alg: "A256KW", wrapped: make([]byte, 40), names: []string{"SSN", "Salary"}}))
	f.Add(encodeMeta(aead, "", "", &envMeta{keyID: "k", alg: "A", wrapped: []byte{1}}))
	f.Add([]byte{1, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseMeta(b)
		if err != nil {
			return
		}
		// What parses re-encodes to the same body: the layout has one spelling.
		again := encodeMeta(aead, "pk", "rk", m)
		m2, err := parseMeta(again)
		if err != nil || m2.keyID != m.keyID || m2.alg != m.alg || !bytes.Equal(m2.wrapped, m.wrapped) ||
			len(m2.names) != len(m.names) || !bytes.Equal(m2.body, m.body) {
			t.Fatalf("re-encoding changed the metadata: %+v vs %+v (%v)", m, m2, err)
		}
	})
}
