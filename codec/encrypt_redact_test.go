package codec_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
)

// secretText is a field type whose methods quote the value in their errors, as custom
// types often do.
type secretText struct{ s string }

func (t secretText) MarshalText() ([]byte, error) {
	if strings.HasPrefix(t.s, "bad") {
		return nil, fmt.Errorf("cannot marshal %q", t.s)
	}
	return []byte(t.s), nil
}

func (t *secretText) UnmarshalText(b []byte) error {
	if strings.HasPrefix(string(b), "bad") || strings.HasPrefix(string(b), "odd") {
		return fmt.Errorf("cannot unmarshal %q", b)
	}
	t.s = string(b)
	return nil
}

type wideSecret struct {
	PK    string   `table:",pk"`
	RK    string   `table:",rk"`
	Level int64    `table:",encrypt"`
	Note  string   `table:",encrypt"`
	Tags  []string `table:",json,encrypt"`
}

type narrowSecret struct {
	PK    string     `table:",pk"`
	RK    string     `table:",rk"`
	Level int16      `table:",encrypt"`
	Note  secretText `table:",encrypt"`
	Tags  []int      `table:",json,encrypt"`
}

// A decrypted value that does not fit its field, or that
// a custom UnmarshalText refuses, must not appear in the error text (nor in anything it
// unwraps to). Neither must the value of an encrypted field that fails to encode.
func TestEncryptedValuesNeverInErrorText(t *testing.T) {
	t.Parallel()
	x := &codec.Encryption{Key: localKey(t, "kek-1")}
	wide := encrypting[wideSecret](t, x)
	narrow := encrypting[narrowSecret](t, x)
	cases := []struct {
		name   string
		in     wideSecret
		secret string
	}{
		{"int overflow", wideSecret{PK: "p", RK: "1", Level: 987654321, Note: "ok"}, "987654321"},
		{"UnmarshalText error", wideSecret{PK: "p", RK: "2", Level: 1, Note: "odd-4111111111111111"}, "4111111111111111"},
		{"json error", wideSecret{PK: "p", RK: "3", Level: 1, Note: "ok", Tags: []string{"salary-123456"}}, "salary-123456"},
	}
	for _, tc := range cases {
		body, err := wide.Encode(&tc.in)
		if err != nil {
			t.Fatal(err)
		}
		var out narrowSecret
		err = narrow.Decode(body, &out)
		var de *codec.DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("%s: %v, want a *DecodeError", tc.name, err)
		}
		if de.Field == "" {
			t.Errorf("%s: the error does not name the field: %v", tc.name, err)
		}
		for e := error(err); e != nil; e = errors.Unwrap(e) {
			if text := e.Error() + fmt.Sprintf(" %v %+v", e, e); strings.Contains(text, tc.secret) {
				t.Errorf("%s: error text carries the decrypted value: %s", tc.name, text)
			}
		}
	}

	// Encoding: the MarshalText error of an encrypted field is withheld too.
	_, err := narrow.Encode(&narrowSecret{PK: "p", RK: "4", Note: secretText{"bad-4111111111111111"}})
	if !errors.Is(err, codec.ErrInvalidInput) {
		t.Fatalf("encode: %v, want ErrInvalidInput", err)
	}
	if strings.Contains(fmt.Sprintf("%v %+v", err, err), "4111111111111111") {
		t.Errorf("encode error carries the value: %v", err)
	}
}

// The value of an encrypted time.Time field that fails to encode (out of the
// Edm.DateTime range) must not appear in the error text, like a MarshalText error's.
// The package doc ("Values of fields tagged encrypt never appear in error text") and
// TestEncryptedValuesNeverInErrorText promise it for the encode side too.
func TestEncryptedTimeOutOfRangeNeverInEncodeErrorText(t *testing.T) {
	t.Parallel()
	type secretBirth struct {
		PK   string    `table:",pk"`
		RK   string    `table:",rk"`
		Born time.Time `table:",encrypt"`
	}
	c := encrypting[secretBirth](t, &codec.Encryption{Key: localKey(t, "kek-1")})
	secret := time.Date(1234, 5, 6, 7, 8, 9, 0, time.UTC)
	_, err := c.Encode(&secretBirth{PK: "p", RK: "r", Born: secret})
	if !errors.Is(err, codec.ErrInvalidInput) {
		t.Fatalf("encode: %v, want ErrInvalidInput", err)
	}
	if text := fmt.Sprintf("%v %+v", err, err); strings.Contains(text, "1234-05-06") {
		t.Errorf("encode error carries the encrypted field's value: %s", text)
	}
}
