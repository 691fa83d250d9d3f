package codec

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"time"
	"unsafe"
)

const annotationSuffix = "@odata.type"

// pending is a property kept for a second pass: an unmapped property (for the extra map or
// a dynamic entity), or the annotation of one.
type pending struct {
	name string
	tok  token
}

func (p *plan) syntax(err *syntaxError) *DecodeError {
	return &DecodeError{Type: p.typeName, Offset: err.off, Reason: err.reason}
}

func (p *plan) decodeErr(goName, prop string, t *token, reason string, err error) *DecodeError {
	return &DecodeError{Type: p.typeName, Field: goName, Property: prop, Offset: t.off, Reason: reason, Err: err}
}

// decode fills the zeroed struct at base from one entity object. skip names a property
// that is neither mapped nor captured (a Registry's discriminator). x decrypts the fields
// with the encrypt option; ctx is the context of its key operations.
func (p *plan) decode(ctx context.Context, data []byte, base unsafe.Pointer, skip string, x *Encryption) error {
	s := scanner{d: data}
	if err := s.begin(); err != nil {
		return p.syntax(err)
	}
	var nameBuf, valBuf [64]byte
	var unknown, annots []pending
	var sealed []sealedProp
	var meta token
	hasMeta := false
	for first := true; ; first = false {
		nameTok, val, ok, serr := s.next(first)
		if serr != nil {
			return p.syntax(serr)
		}
		if !ok {
			break
		}
		name := nameTok.raw
		if nameTok.esc || nameTok.wide {
			name = nameTok.text(nameBuf[:0])
		}
		switch string(name) {
		case "PartitionKey":
			if err := p.setKey(&p.pk, base, "PartitionKey", &val); err != nil {
				return err
			}
			continue
		case "RowKey":
			if err := p.setKey(&p.rk, base, "RowKey", &val); err != nil {
				return err
			}
			continue
		case "odata.etag":
			if p.etag != nil {
				if err := p.setKey(p.etag, base, "odata.etag", &val); err != nil {
					return err
				}
			}
			continue
		case "Timestamp":
			if p.ts != nil && val.kind != vNull {
				t, ok := timeValue(&val, valBuf[:0])
				if !ok {
					return p.decodeErr("Timestamp", "Timestamp", &val, "malformed Edm.DateTime", nil)
				}
				*(*time.Time)(p.ts.addr(base, true)) = t
			}
			continue
		}
		if string(name) == EncryptionMetadataProperty {
			meta, hasMeta = val, true
			if p.encrypted > 0 {
				continue // read by decrypt, never captured
			}
		}
		if f := p.byName[string(name)]; f != nil {
			if f.encrypt {
				sealed = append(sealed, sealedProp{f: f, tok: val})
				continue // decrypted once the metadata is known (it may come later)
			}
			if err := p.setField(f, base, &val, valBuf[:0]); err != nil {
				return err
			}
			continue
		}
		if p.extra == nil || bytes.HasPrefix(name, []byte("odata.")) {
			continue
		}
		if bytes.HasSuffix(name, []byte(annotationSuffix)) {
			annots = append(annots, pending{name: string(name[:len(name)-len(annotationSuffix)]), tok: val})
		} else if string(name) != skip {
			unknown = append(unknown, pending{name: string(name), tok: val})
		}
	}
	if p.encrypted > 0 || hasMeta {
		if err := p.decrypt(ctx, base, x, sealed, &meta, hasMeta, unknown); err != nil {
			return err
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	m := make(map[string]any, len(unknown))
	for i := range unknown {
		u := &unknown[i]
		v, reason := dynamicValue(annotationOf(annots, u.name), &u.tok)
		if reason != "" {
			return p.decodeErr(u.name, u.name, &u.tok, reason, nil)
		}
		if v != nil {
			m[u.name] = v
		}
	}
	*(*map[string]any)(p.extra.addr(base, true)) = m
	return nil
}

func annotationOf(annots []pending, name string) string {
	for i := range annots {
		if annots[i].name == name && annots[i].tok.kind == vString {
			return string(annots[i].tok.raw)
		}
	}
	return ""
}

func (p *plan) setKey(l *loc, base unsafe.Pointer, prop string, t *token) *DecodeError {
	switch t.kind {
	case vNull:
		return nil
	case vString:
		*(*string)(l.addr(base, true)) = t.string()
		return nil
	}
	return p.decodeErr(prop, prop, t, "want a string, found "+t.kindName(), nil)
}

func timeValue(t *token, buf []byte) (time.Time, bool) {
	if t.kind != vString {
		return time.Time{}, false
	}
	return parseDateTime(t.text(buf))
}

// setField decodes one property into its field, by the field's Go type.
func (p *plan) setField(f *field, base unsafe.Pointer, t *token, buf []byte) *DecodeError {
	if t.kind == vNull {
		return nil // the service stores no nulls; treat as absent
	}
	fp := f.addr(base, true)
	target := fp
	if f.ptr {
		target = reflect.New(f.typ).UnsafePointer()
	}
	fail := func(reason string, err error) *DecodeError {
		return p.decodeErr(f.goName, f.name, t, reason, err)
	}
	switch f.kind {
	case fString:
		if t.kind != vString {
			return fail("want a string, found "+t.kindName(), nil)
		}
		*(*string)(target) = t.string()
	case fBool:
		if t.kind != vTrue && t.kind != vFalse {
			return fail("want a boolean, found "+t.kindName(), nil)
		}
		*(*bool)(target) = t.kind == vTrue
	case fInt32, fInt64:
		n, reason := intValue(t, buf)
		if reason != "" {
			return fail(reason, nil)
		}
		if !fitInt(n, f.rk) {
			return fail("value "+itoa(n)+" overflows "+f.typ.String(), nil)
		}
		writeInt(target, f.rk, n)
	case fDouble:
		bits := 64
		if f.rk == reflect.Float32 {
			bits = 32
		}
		x, reason := floatValue(t, buf, bits)
		if reason != "" {
			return fail(reason, nil)
		}
		if bits == 32 {
			*(*float32)(target) = float32(x)
		} else {
			*(*float64)(target) = x
		}
	case fTime:
		v, ok := timeValue(t, buf)
		if !ok {
			return fail("malformed Edm.DateTime", nil)
		}
		*(*time.Time)(target) = v
	case fBinary:
		if t.kind != vString {
			return fail("want a base64 string, found "+t.kindName(), nil)
		}
		b, ok := binaryValue(t.text(buf))
		if !ok {
			return fail("malformed base64 in Edm.Binary", nil)
		}
		*(*[]byte)(target) = b
	case fGUID:
		if t.kind != vString {
			return fail("want a GUID string, found "+t.kindName(), nil)
		}
		g, ok := parseGUID(t.text(buf))
		if !ok {
			return fail("malformed Edm.Guid", nil)
		}
		*(*GUID)(target) = g
	case fText:
		if t.kind != vString {
			return fail("want a string, found "+t.kindName(), nil)
		}
		u := reflect.NewAt(f.typ, target).Interface().(encoding.TextUnmarshaler)
		if err := u.UnmarshalText(t.text(nil)); err != nil { // fresh: the method may keep it
			return fail("UnmarshalText failed", err)
		}
	case fJSON:
		text := t.raw // a nested value is accepted as is
		if t.kind == vString {
			text = t.text(nil)
		}
		if err := json.Unmarshal(text, reflect.NewAt(f.typ, target).Interface()); err != nil {
			return fail("json option: invalid JSON", err)
		}
	}
	if f.ptr {
		*(*unsafe.Pointer)(fp) = target
	}
	return nil
}

func writeInt(p unsafe.Pointer, k reflect.Kind, n int64) {
	switch k {
	case reflect.Int8:
		*(*int8)(p) = int8(n)
	case reflect.Int16:
		*(*int16)(p) = int16(n)
	case reflect.Int32:
		*(*int32)(p) = int32(n)
	case reflect.Uint8:
		*(*uint8)(p) = uint8(n)
	case reflect.Uint16:
		*(*uint16)(p) = uint16(n)
	case reflect.Uint32:
		*(*uint32)(p) = uint32(n)
	case reflect.Int:
		*(*int)(p) = int(n)
	default:
		*(*int64)(p) = n
	}
}

// dynamicValue types one property of a dynamic entity: by its annotation, else by its JSON
// kind (numbers: whole and in the int32 range -> int32, else float64). A null gives nil.
func dynamicValue(edm string, t *token) (any, string) {
	if t.kind == vNull {
		return nil, ""
	}
	var buf []byte
	switch edm {
	case "":
		switch t.kind {
		case vString:
			return t.string(), ""
		case vTrue, vFalse:
			return t.kind == vTrue, ""
		case vNumber:
			// An integer literal in the int32 range is an Edm.Int32 (the service writes
			// Int32 unannotated); a fraction or an exponent marks a double, even a whole
			// one ("5.0"): typing it Int32 would write another application's Edm.Double
			// back as Int32 and break its "Price eq 5.0" filters.
			if !bytes.ContainsAny(t.raw, ".eE") {
				if n, ok, _ := parseInt(t.raw); ok && n >= math.MinInt32 && n <= math.MaxInt32 {
					return int32(n), ""
				}
			}
			x, reason := floatValue(t, nil, 64)
			if reason != "" {
				return nil, reason
			}
			return x, ""
		}
		return nil, "nested objects and arrays are not table property values"
	case "Edm.String":
		if t.kind != vString {
			return nil, "Edm.String: want a string, found " + t.kindName()
		}
		return t.string(), ""
	case "Edm.Boolean":
		if t.kind != vTrue && t.kind != vFalse {
			return nil, "Edm.Boolean: want a boolean, found " + t.kindName()
		}
		return t.kind == vTrue, ""
	case "Edm.Int32":
		n, reason := intValue(t, buf)
		if reason == "" && (n < math.MinInt32 || n > math.MaxInt32) {
			reason = "Edm.Int32 value " + itoa(n) + " overflows int32"
		}
		return int32(n), reason
	case "Edm.Int64":
		n, reason := intValue(t, buf)
		return n, reason
	case "Edm.Double":
		x, reason := floatValue(t, buf, 64)
		return x, reason
	case "Edm.DateTime":
		v, ok := timeValue(t, buf)
		if !ok {
			return nil, "malformed Edm.DateTime"
		}
		return v, ""
	case "Edm.Binary":
		if t.kind != vString {
			return nil, "Edm.Binary: want a base64 string, found " + t.kindName()
		}
		b, ok := binaryValue(t.text(buf))
		if !ok {
			return nil, "malformed base64 in Edm.Binary"
		}
		return b, ""
	case "Edm.Guid":
		if t.kind != vString {
			return nil, "Edm.Guid: want a string, found " + t.kindName()
		}
		g, ok := parseGUID(t.text(buf))
		if !ok {
			return nil, "malformed Edm.Guid"
		}
		return g, ""
	}
	return nil, "unknown EDM type " + edm
}
