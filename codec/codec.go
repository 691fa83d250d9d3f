package codec

import (
	"context"
	"reflect"
	"unsafe"
)

// Codec is the cached, precomputed plan that maps the struct type T to a table entity and
// back. It is safe for concurrent use. Get one with For.
type Codec[T any] struct {
	p *plan
	// enc encrypts the fields with the encrypt option (WithEncryption); nil for For's codec.
	enc *Encryption
	// reserved is a property that Decode never captures (WithReserved); "" for none.
	reserved string
}

// For returns the codec for T, built once per type by reflection and cached.
//
// It returns an *InvalidInputError (wrapping ErrInvalidInput) if T is not a struct, lacks
// exactly one PartitionKey and one RowKey string field, has a field whose type cannot be
// stored (chan, func, complex, uint, uint64, uintptr, unsafe.Pointer, interface, a struct,
// map, array or non-byte slice without the json option, ...), a malformed tag, an invalid
// or duplicate property name, or more than MaxProperties properties.
func For[T any]() (*Codec[T], error) {
	t := reflect.TypeFor[T]()
	if c, ok := codecs.Load(t); ok {
		return c.(*Codec[T]), nil
	}
	p, err := planFor(t)
	if err != nil {
		return nil, err
	}
	c, _ := codecs.LoadOrStore(t, &Codec[T]{p: p})
	return c.(*Codec[T]), nil
}

// Encode returns the JSON body of an insert, update or upsert of v: "PartitionKey",
// "RowKey" and every present property, with the "@odata.type" annotations the service needs
// (Int64, Double, DateTime, Binary, Guid). It never writes ETag, Timestamp or odata.*
// metadata.
//
// Every service limit is checked first; a broken one gives an *InvalidInputError
// (wrapping ErrInvalidInput) naming the type, the field, the size and the limit.
func (c *Codec[T]) Encode(v *T) ([]byte, error) {
	out, err := c.AppendEncode(make([]byte, 0, 128+64*len(c.p.fields)), v)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AppendEncode is Encode appending to dst. On error it returns dst unchanged and an
// *InvalidInputError.
func (c *Codec[T]) AppendEncode(dst []byte, v *T) ([]byte, error) {
	return c.appendEncode(context.Background(), dst, v)
}

func (c *Codec[T]) appendEncode(ctx context.Context, dst []byte, v *T) ([]byte, error) {
	if v == nil {
		return dst, invalid(c.p.typeName, "", "nil entity")
	}
	return c.p.appendEncode(ctx, dst, unsafe.Pointer(v), nil, nil, c.enc)
}

// EncodeProperties is Encode restricted to PartitionKey, RowKey and the named properties
// (stored property names or Go field names; names held in the extra map are accepted too),
// for a merge of some properties. A named property that is absent (nil pointer, omitempty)
// is left out, which a merge treats as "unchanged".
//
// It returns an *InvalidInputError for an unknown name or a broken limit.
func (c *Codec[T]) EncodeProperties(v *T, names ...string) ([]byte, error) {
	if v == nil {
		return nil, invalid(c.p.typeName, "", "nil entity")
	}
	if c.p.encrypted > 0 {
		return nil, mergeRefused(c.p.typeName)
	}
	sub, err := c.p.subset(unsafe.Pointer(v), names)
	if err != nil {
		return nil, err
	}
	return c.p.appendEncode(context.Background(), make([]byte, 0, 128), unsafe.Pointer(v), sub, nil, nil)
}

func (p *plan) subset(base unsafe.Pointer, names []string) (*subset, error) {
	sub := &subset{}
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		prop, ok := p.propertyName(n)
		if !ok && p.extra != nil {
			if a := p.extra.addr(base, false); a != nil {
				if _, inExtra := (*(*map[string]any)(a))[n]; inExtra {
					if !seen[n] {
						sub.extra = append(sub.extra, n)
						seen[n] = true
					}
					continue
				}
			}
		}
		if !ok {
			return nil, invalid(p.typeName, n, "unknown property")
		}
		if prop == "PartitionKey" || prop == "RowKey" || seen[prop] {
			continue
		}
		seen[prop] = true
		f := p.byName[prop]
		if f == nil {
			return nil, invalid(p.typeName, n, "not a writable property")
		}
		sub.fields = append(sub.fields, f)
	}
	return sub, nil
}

// Decode fills v from one entity JSON object as aztables returns it
// (GetEntityResponse.Value, or one element of ListEntitiesResponse.Entities). v is reset to
// its zero value first; missing properties keep zero values. The etag field is set from
// "odata.etag", the timestamp field from "Timestamp"; other odata.* members are ignored;
// properties T does not map go to its extra field if it has one, else are ignored.
// Values are decoded by the destination field's Go type (see the package doc for what is
// accepted).
//
// It returns a *DecodeError for malformed JSON or a value that does not fit its field.
func (c *Codec[T]) Decode(data []byte, v *T) error {
	if v == nil {
		return &DecodeError{Type: c.p.typeName, Reason: "nil destination"}
	}
	return c.DecodeContext(context.Background(), data, v)
}

// Keys returns the PartitionKey and RowKey of v ("", "" for a nil v).
func (c *Codec[T]) Keys(v *T) (pk, rk string) {
	if v == nil {
		return "", ""
	}
	return c.p.keys(unsafe.Pointer(v))
}

// SetKeys stores pk and rk in v's PartitionKey and RowKey fields; it does nothing for a nil
// v. With encryption, set the keys before encoding: ciphertexts are bound to the keys they
// were encoded with, so an entity re-keyed after encoding (as a dynamic Entity, say) reads
// as tampered. A copy of an entity under other keys is encoded again, with its own keys.
func (c *Codec[T]) SetKeys(v *T, pk, rk string) {
	if v == nil {
		return
	}
	base := unsafe.Pointer(v)
	*(*string)(c.p.pk.addr(base, true)) = pk
	*(*string)(c.p.rk.addr(base, true)) = rk
}

// ETag returns the ETag held in v, or "" if T has no etag field.
func (c *Codec[T]) ETag(v *T) string {
	if v == nil {
		return ""
	}
	return c.p.getETag(unsafe.Pointer(v))
}

func (p *plan) getETag(base unsafe.Pointer) string {
	if p.etag == nil {
		return ""
	}
	if a := p.etag.addr(base, false); a != nil {
		return *(*string)(a)
	}
	return ""
}

// SetETag stores etag in v; it does nothing if T has no etag field or v is nil.
func (c *Codec[T]) SetETag(v *T, etag string) {
	if c.p.etag != nil && v != nil {
		*(*string)(c.p.etag.addr(unsafe.Pointer(v), true)) = etag
	}
}

// HasETag reports whether T has an etag field.
func (c *Codec[T]) HasETag() bool { return c.p.etag != nil }

// Select lists the stored property names for a $select projection of T: PartitionKey,
// RowKey, Timestamp (if T has a timestamp field) and every property of T. A projection
// leaves out what T's extra field would capture. The slice is a fresh copy.
func (c *Codec[T]) Select() []string {
	return append([]string(nil), c.p.sel...)
}

// PropertyName maps a Go field name or a stored property name to the stored property name
// ("PartitionKey", "RowKey" and "Timestamp" for the system fields); ok is false if T has no
// such field or property.
func (c *Codec[T]) PropertyName(name string) (string, bool) {
	return c.p.propertyName(name)
}

func (p *plan) propertyName(name string) (string, bool) {
	if _, ok := p.byName[name]; ok {
		return name, true
	}
	switch name {
	case "PartitionKey", "RowKey":
		return name, true
	case "Timestamp":
		if p.ts != nil {
			return name, true
		}
	}
	prop, ok := p.byGo[name]
	return prop, ok
}
