package dataseries

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"unicode"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// stored converts v to the exact Go type codec stores as V's Edm type.
func (s *Store[V]) stored(v V) any {
	switch s.kind {
	case reflect.Int32:
		return int32(v)
	case reflect.Int64:
		return int64(v)
	}
	return float64(v)
}

// decode reads the points of e; a point of another numeric type (written by another
// client) is converted, a non-numeric one is an error.
func (s *Store[V]) decode(e *codec.Entity) (Series[V], error) {
	out := Series[V]{PartitionKey: e.PartitionKey, RowKey: e.RowKey, ETag: e.ETag, Points: make([]V, len(s.names))}
	for i, name := range s.names {
		switch x := e.Properties[name].(type) {
		case nil:
		case int32:
			out.Points[i] = V(x)
		case int64:
			out.Points[i] = V(x)
		case float64:
			out.Points[i] = V(x)
		default:
			return Series[V]{}, &codec.DecodeError{Field: name, Property: name, Reason: fmt.Sprintf("holds a %T, not a number", x)}
		}
	}
	return out, nil
}

func (s *Store[V]) checkKeys(pk, rk string) error {
	if pk == "" {
		return errs.Invalid("PartitionKey", "is empty")
	}
	if err := codec.ValidateKey("PartitionKey", pk); err != nil {
		return err
	}
	return codec.ValidateKey("RowKey", rk)
}

func (s *Store[V]) checkIndex(i int) error {
	if i < 0 || i >= len(s.names) {
		return errs.Invalid("point", "index %d is outside [0, %d)", i, len(s.names))
	}
	return nil
}

func checkOpID(id string) error {
	if len(id) > MaxOpIDLen {
		return errs.TooLarge("OpID", "too long", len(id), MaxOpIDLen)
	}
	if strings.ContainsFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return errs.Invalid("OpID", "%q holds a space or a control character", id)
	}
	return nil
}

// autoOpID returns a fresh random operation id for a call that gave none.
func autoOpID() string {
	var b [9]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "~" + base64.RawURLEncoding.EncodeToString(b[:])
}
