package codec

import "bytes"

// WithReserved returns a codec for T that treats the property name as reserved for the
// layer that stores it (repo's write tracking, for one): Decode never captures it into
// T's extra map (or a dynamic Entity's properties), so that a read-modify-write of such an
// entity does not write it back as one of its own. Encode is unchanged. name must be a
// valid property name that T does not map.
//
// Errors: *InvalidInputError for an invalid name or one that T maps.
func (c *Codec[T]) WithReserved(name string) (*Codec[T], error) {
	if err := validatePropertyName(c.p.typeName, name); err != nil {
		return nil, err
	}
	if isSystemName(name) || c.p.byName[name] != nil {
		return nil, invalid(c.p.typeName, name, "the reserved property name is already used by the type or the service")
	}
	return &Codec[T]{p: c.p, enc: c.enc, reserved: name}, nil
}

// HasExtra reports whether T has an extra map (codec.Entity has one): such a type keeps
// properties it does not map, typed by their JSON form and annotations, so its reads need
// full metadata to tell a whole Edm.Double from an Edm.Int32.
func (c *Codec[T]) HasExtra() bool { return c.p.extra != nil }

// StringProperties returns the values of the named top-level string members of one
// entity JSON object (for example "PartitionKey", "RowKey", "odata.etag" and a tracking
// property), in the order of names; a member that is absent or not a string gives "".
// It reads the object once, without decoding other values.
//
// Errors: a *DecodeError for malformed JSON.
func StringProperties(data []byte, names ...string) ([]string, error) {
	out := make([]string, len(names))
	s := scanner{d: data}
	if err := s.begin(); err != nil {
		return nil, &DecodeError{Offset: err.off, Reason: err.reason}
	}
	var nameBuf [64]byte
	for first := true; ; first = false {
		nameTok, val, ok, serr := s.next(first)
		if serr != nil {
			return nil, &DecodeError{Offset: serr.off, Reason: serr.reason}
		}
		if !ok {
			return out, nil
		}
		name := nameTok.raw
		if nameTok.esc || nameTok.wide {
			name = nameTok.text(nameBuf[:0])
		}
		for i, n := range names {
			if val.kind == vString && bytes.Equal(name, []byte(n)) {
				out[i] = val.string()
			}
		}
	}
}

// CountProperties returns the number of custom properties of one entity JSON object: every
// member but PartitionKey, RowKey, Timestamp, odata.* metadata and @odata.type annotations.
// It is how a layer that adds a property of its own checks MaxProperties.
//
// Errors: a *DecodeError for malformed JSON.
func CountProperties(data []byte) (int, error) {
	s := scanner{d: data}
	if err := s.begin(); err != nil {
		return 0, &DecodeError{Offset: err.off, Reason: err.reason}
	}
	n := 0
	var nameBuf [64]byte
	for first := true; ; first = false {
		nameTok, _, ok, serr := s.next(first)
		if serr != nil {
			return 0, &DecodeError{Offset: serr.off, Reason: serr.reason}
		}
		if !ok {
			return n, nil
		}
		name := nameTok.raw
		if nameTok.esc || nameTok.wide {
			name = nameTok.text(nameBuf[:0])
		}
		switch {
		case isSystemName(string(name)), bytes.HasPrefix(name, []byte("odata.")), bytes.HasSuffix(name, []byte(annotationSuffix)):
		default:
			n++
		}
	}
}

// WithoutProperties returns one entity JSON object without the top-level members named in
// names and their "@odata.type" annotations, and whether any was removed; data itself is
// returned, unchanged, when none was. Names are compared after JSON unescaping, so an
// escaped spelling of a name is removed too. It is how a layer hides a property it reserves
// (repo's write tracking) from decoders that would otherwise capture it.
//
// Errors: a *DecodeError for malformed JSON.
func WithoutProperties(data []byte, names ...string) ([]byte, bool, error) {
	s := scanner{d: data}
	if err := s.begin(); err != nil {
		return nil, false, &DecodeError{Offset: err.off, Reason: err.reason}
	}
	var out []byte // nil until a member is removed
	kept := 0      // members kept so far
	var nameBuf [64]byte
	for first := true; ; first = false {
		start := s.i
		nameTok, _, ok, serr := s.next(first)
		if serr != nil {
			return nil, false, &DecodeError{Offset: serr.off, Reason: serr.reason}
		}
		if !ok {
			break
		}
		name := nameTok.text(nameBuf[:0])
		drop := false
		for _, n := range names {
			if string(name) == n || (bytes.HasSuffix(name, []byte(annotationSuffix)) && string(name[:len(name)-len(annotationSuffix)]) == n) {
				drop = true
				break
			}
		}
		switch {
		case drop && out == nil:
			// The first removal: copy the members kept so far (data up to this member).
			out = append(make([]byte, 0, len(data)), data[:start]...)
			if kept == 0 {
				out = append(out[:0], '{')
			}
		case !drop && out != nil:
			if kept > 0 {
				out = append(out, ',')
			}
			out = append(out, data[nameTok.off:s.i]...)
		}
		if !drop {
			kept++
		}
	}
	if out == nil {
		return data, false, nil
	}
	return append(out, '}'), true, nil
}
