package codec

import (
	"context"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"
)

// Entity size formula of the service (see doc.go): 4 bytes, the keys in UTF-16, and per
// property 8 bytes, its name in UTF-16 and its value.
const (
	entityOverhead   = 4
	propertyOverhead = 8
)

// encoder carries the state of one Encode: the type name for errors, the running count of
// custom properties and the running entity size.
type encoder struct {
	typeName string
	count    int
	size     int
}

// subset restricts an encoding to some properties (EncodeProperties).
type subset struct {
	fields []*field
	extra  []string
}

// discProp is the discriminator property a Registry adds to an entity.
type discProp struct {
	name, value string
	annotKey    []byte // `"Name":`
}

// appendEncode writes the entity at base. x encrypts the fields with the encrypt option; a
// type with such fields is refused without it. ctx is the context of the key operations.
func (p *plan) appendEncode(ctx context.Context, dst []byte, base unsafe.Pointer, only *subset, disc *discProp, x *Encryption) ([]byte, error) {
	e := encoder{typeName: p.typeName}
	start := len(dst)
	pk, rk := p.keys(base)
	pkUnits, err := keyUnits("PartitionKey", pk)
	if err != nil {
		err.Type = p.typeName
		return dst[:start], err
	}
	rkUnits, err := keyUnits("RowKey", rk)
	if err != nil {
		err.Type = p.typeName
		return dst[:start], err
	}
	e.size = entityOverhead + 2*(pkUnits+rkUnits)
	dst = append(dst, `{"PartitionKey":`...)
	dst, _, _ = appendString(dst, pk)
	dst = append(dst, `,"RowKey":`...)
	dst, _, _ = appendString(dst, rk)

	var env *entitySealer
	if p.encrypted > 0 {
		if only != nil {
			return dst[:start], mergeRefused(p.typeName)
		}
		if x == nil || x.Key == nil {
			return dst[:start], invalid(p.typeName, "", "the type has encrypted fields (the encrypt option) but the codec has no Encryption with a Key: use WithEncryption, or repo.Options.Encryption")
		}
		env = p.newSealer(pk, rk, base, x)
		defer env.wipe()
	}
	fields := p.fields
	if only != nil {
		fields = only.fields
	}
	for _, f := range fields {
		if f.encrypt {
			if dst, err = e.appendEncrypted(dst, f, base, env); err != nil {
				return dst[:start], err
			}
			continue
		}
		if dst, err = e.appendField(dst, f, base); err != nil {
			return dst[:start], err
		}
	}
	if env != nil {
		var xerr error
		if dst, xerr = e.appendMetadata(ctx, dst, env, x.Key); xerr != nil {
			return dst[:start], xerr
		}
	}
	if disc != nil {
		dst = append(dst, ',')
		dst = append(dst, disc.annotKey...)
		var units int
		dst, units, _ = appendString(dst, disc.value)
		e.count++
		e.size += propertyOverhead + 2*len(disc.name) + 4 + 2*units
	}
	if p.extra != nil {
		if a := p.extra.addr(base, false); a != nil {
			m := *(*map[string]any)(a)
			var names []string
			if only != nil {
				names = only.extra
			} else if len(m) > 0 {
				names = make([]string, 0, len(m))
				for k := range m {
					names = append(names, k)
				}
				slices.Sort(names)
			}
			for _, name := range names {
				if disc != nil && name == disc.name {
					continue // the registry's discriminator wins over a captured copy
				}
				if env != nil && name == EncryptionMetadataProperty {
					continue // written afresh above; a captured copy is stale
				}
				if _, dup := p.byName[name]; dup {
					return dst[:start], invalid(p.typeName, name, "extra property duplicates a property of the type")
				}
				if dst, err = e.appendDynamic(dst, name, m[name]); err != nil {
					return dst[:start], err
				}
			}
		}
	}
	if e.count > MaxProperties {
		return dst[:start], tooLarge(p.typeName, "(properties)", "too many custom properties", e.count, MaxProperties)
	}
	if e.size > MaxEntityBytes {
		return dst[:start], tooLarge(p.typeName, "(entity)", "entity larger than 1 MiB", e.size, MaxEntityBytes)
	}
	return append(dst, '}'), nil
}

func (p *plan) keys(base unsafe.Pointer) (pk, rk string) {
	if a := p.pk.addr(base, false); a != nil {
		pk = *(*string)(a)
	}
	if a := p.rk.addr(base, false); a != nil {
		rk = *(*string)(a)
	}
	return pk, rk
}

func keyUnits(field, value string) (int, *InvalidInputError) {
	if err := validateKey(field, value); err != nil {
		return 0, err
	}
	n, _ := utf16Units(value)
	return n, nil
}

func (e *encoder) fail(f *field, reason string) *InvalidInputError {
	return invalid(e.typeName, f.goName, reason)
}

// begin writes the separator, the annotation and the name of a property and counts it.
func (e *encoder) begin(dst []byte, f *field, valueSize int) []byte {
	e.count++
	e.size += propertyOverhead + f.nameBytes + valueSize
	dst = append(dst, ',')
	dst = append(dst, f.annot...)
	return append(dst, f.key...)
}

func (e *encoder) appendField(dst []byte, f *field, base unsafe.Pointer) ([]byte, *InvalidInputError) {
	fp := f.addr(base, false)
	if fp == nil {
		return dst, nil // behind a nil embedded pointer: absent
	}
	if f.ptr {
		fp = *(*unsafe.Pointer)(fp)
		if fp == nil {
			return dst, nil // nil pointer: absent (the service stores no nulls)
		}
	}
	switch f.kind {
	case fString:
		s := *(*string)(fp)
		if s == "" && f.omitEmpty && !f.ptr {
			return dst, nil
		}
		return appendStringProp(e, dst, f, s)
	case fBool:
		b := *(*bool)(fp)
		if !b && f.omitEmpty && !f.ptr {
			return dst, nil
		}
		dst = e.begin(dst, f, 1)
		if b {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case fInt32, fInt64:
		n := readInt(fp, f.rk)
		if n == 0 && f.omitEmpty && !f.ptr {
			return dst, nil
		}
		if f.kind == fInt32 {
			dst = e.begin(dst, f, 4)
			return strconv.AppendInt(dst, n, 10), nil
		}
		dst = e.begin(dst, f, 8)
		dst = append(dst, '"')
		dst = strconv.AppendInt(dst, n, 10)
		return append(dst, '"'), nil
	case fDouble:
		var x float64
		bits := 64
		if f.rk == reflect.Float32 {
			x, bits = float64(*(*float32)(fp)), 32
		} else {
			x = *(*float64)(fp)
		}
		if x == 0 && f.omitEmpty && !f.ptr {
			return dst, nil
		}
		dst = e.begin(dst, f, 8)
		return appendDouble(dst, x, bits), nil
	case fTime:
		t := *(*time.Time)(fp)
		if t.IsZero() {
			if f.omitEmpty && !f.ptr {
				return dst, nil
			}
			return dst, e.fail(f, "zero time.Time is outside the Edm.DateTime range (1601-01-01 to 9999-12-31): use omitempty or *time.Time to leave it out")
		}
		if !inDateTimeRange(t) {
			return dst, e.fail(f, "time "+t.UTC().Format(time.RFC3339)+" is outside the Edm.DateTime range (1601-01-01 to 9999-12-31)")
		}
		dst = e.begin(dst, f, 8)
		return appendDateTime(dst, t), nil
	case fBinary:
		b := *(*[]byte)(fp)
		if b == nil || (len(b) == 0 && f.omitEmpty) {
			return dst, nil // a nil slice is absent, like a nil pointer
		}
		if len(b) > MaxBinaryBytes {
			return dst, tooLarge(e.typeName, f.goName, "Edm.Binary larger than 64 KiB", len(b), MaxBinaryBytes)
		}
		dst = e.begin(dst, f, 4+len(b))
		return appendBase64(dst, b), nil
	case fGUID:
		g := *(*GUID)(fp)
		if g.IsZero() && f.omitEmpty && !f.ptr {
			return dst, nil
		}
		dst = e.begin(dst, f, 16)
		dst = append(dst, '"')
		dst = g.appendText(dst)
		return append(dst, '"'), nil
	case fText:
		m := reflect.NewAt(f.typ, fp).Interface().(encoding.TextMarshaler)
		text, err := m.MarshalText()
		if err != nil {
			return dst, e.fail(f, "MarshalText: "+err.Error())
		}
		if len(text) == 0 && f.omitEmpty && !f.ptr {
			return dst, nil
		}
		return appendStringProp(e, dst, f, bytesView(text))
	case fJSON:
		v := reflect.NewAt(f.typ, fp).Elem()
		switch v.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
			if v.IsNil() {
				return dst, nil
			}
		}
		if f.omitEmpty && (v.IsZero() || (v.Kind() == reflect.Map || v.Kind() == reflect.Slice) && v.Len() == 0) {
			return dst, nil
		}
		text, err := json.Marshal(v.Interface())
		if err != nil {
			return dst, e.fail(f, "json option: "+err.Error())
		}
		return appendStringProp(e, dst, f, bytesView(text))
	}
	return dst, e.fail(f, "unsupported field kind")
}

// appendStringProp writes an Edm.String property after checking UTF-8 and the 64 KiB limit.
func appendStringProp(e *encoder, dst []byte, f *field, s string) ([]byte, *InvalidInputError) {
	mark := len(dst)
	dst = e.begin(dst, f, 0)
	dst, units, ok := appendString(dst, s)
	if !ok {
		return dst[:mark], e.fail(f, "string is not valid UTF-8 (it could not be stored unchanged)")
	}
	if 2*units > MaxStringBytes {
		return dst[:mark], tooLarge(e.typeName, f.goName, "Edm.String larger than 64 KiB of UTF-16", 2*units, MaxStringBytes)
	}
	e.size += 4 + 2*units
	return dst, nil
}

// appendDynamic writes one property of a dynamic entity or of an extra map.
func (e *encoder) appendDynamic(dst []byte, name string, v any) ([]byte, *InvalidInputError) {
	if v == nil {
		return dst, nil
	}
	if err := validatePropertyName(e.typeName, name); err != nil {
		return dst, err
	}
	if isSystemName(name) {
		return dst, invalid(e.typeName, name, "reserved system property name")
	}
	f := &field{name: name, goName: name}
	units, _ := utf16Units(name)
	f.nameBytes = 2 * units
	f.key = appendKey(make([]byte, 0, len(name)+3), name)
	edm := ""
	switch x := v.(type) {
	case string:
		return appendStringProp(e, dst, f, x)
	case bool:
		dst = e.begin(dst, f, 1)
		return strconv.AppendBool(dst, x), nil
	case int32:
		dst = e.begin(dst, f, 4)
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64, int:
		var n int64
		if i, ok := x.(int); ok {
			n = int64(i)
		} else {
			n = x.(int64)
		}
		edm = "Edm.Int64"
		dst = e.beginAnnotated(dst, f, edm, 8)
		dst = append(dst, '"')
		dst = strconv.AppendInt(dst, n, 10)
		return append(dst, '"'), nil
	case float64:
		dst = e.beginAnnotated(dst, f, "Edm.Double", 8)
		return appendDouble(dst, x, 64), nil
	case time.Time:
		if !inDateTimeRange(x) {
			return dst, invalid(e.typeName, name, "time "+x.UTC().Format(time.RFC3339)+" is outside the Edm.DateTime range (1601-01-01 to 9999-12-31)")
		}
		dst = e.beginAnnotated(dst, f, "Edm.DateTime", 8)
		return appendDateTime(dst, x), nil
	case []byte:
		if x == nil {
			return dst, nil
		}
		if len(x) > MaxBinaryBytes {
			return dst, tooLarge(e.typeName, name, "Edm.Binary larger than 64 KiB", len(x), MaxBinaryBytes)
		}
		dst = e.beginAnnotated(dst, f, "Edm.Binary", 4+len(x))
		return appendBase64(dst, x), nil
	case GUID:
		dst = e.beginAnnotated(dst, f, "Edm.Guid", 16)
		dst = append(dst, '"')
		dst = x.appendText(dst)
		return append(dst, '"'), nil
	}
	return dst, invalid(e.typeName, name, "unsupported dynamic property type "+reflect.TypeOf(v).String()+
		" (want string, bool, int32, int64, float64, time.Time, []byte or GUID)")
}

func (e *encoder) beginAnnotated(dst []byte, f *field, edm string, valueSize int) []byte {
	e.count++
	e.size += propertyOverhead + f.nameBytes + valueSize
	dst = append(dst, ',', '"')
	dst = append(dst, f.name...)
	dst = append(dst, `@odata.type":"`...)
	dst = append(dst, edm...)
	dst = append(dst, '"', ',')
	return append(dst, f.key...)
}

func appendKey(dst []byte, name string) []byte {
	dst = append(dst, '"')
	dst = append(dst, name...)
	return append(dst, '"', ':')
}

// readInt reads an integer field of any supported width as an int64.
func readInt(p unsafe.Pointer, k reflect.Kind) int64 {
	switch k {
	case reflect.Int8:
		return int64(*(*int8)(p))
	case reflect.Int16:
		return int64(*(*int16)(p))
	case reflect.Int32:
		return int64(*(*int32)(p))
	case reflect.Uint8:
		return int64(*(*uint8)(p))
	case reflect.Uint16:
		return int64(*(*uint16)(p))
	case reflect.Uint32:
		return int64(*(*uint32)(p))
	case reflect.Int:
		return int64(*(*int)(p))
	default: // reflect.Int64
		return *(*int64)(p)
	}
}

func inDateTimeRange(t time.Time) bool {
	// Edm.DateTime keeps 100 ns ticks and appendDateTime truncates to them: judge the
	// value that is sent, so that 9999-12-31T23:59:59.999999999Z (stored as .9999999) passes.
	t = t.Truncate(100 * time.Nanosecond)
	return !t.Before(minDateTime) && !t.After(maxDateTime)
}

// appendDouble writes an Edm.Double value: a JSON number formatted as encoding/json does,
// or "NaN", "Infinity", "-Infinity" as strings (the annotation makes them doubles).
func appendDouble(dst []byte, x float64, bits int) []byte {
	switch {
	case math.IsNaN(x):
		return append(dst, `"NaN"`...)
	case math.IsInf(x, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(x, -1):
		return append(dst, `"-Infinity"`...)
	}
	abs := math.Abs(x)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, x, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// appendDateTime writes t as a quoted UTC RFC 3339 time with 7 fractional digits (100 ns
// ticks, the precision of Edm.DateTime; finer nanoseconds are truncated).
func appendDateTime(dst []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	hour, min, sec := t.Clock()
	ticks := t.Nanosecond() / 100
	dst = append(dst, '"')
	dst = appendDigits(dst, year, 4)
	dst = append(dst, '-')
	dst = appendDigits(dst, int(month), 2)
	dst = append(dst, '-')
	dst = appendDigits(dst, day, 2)
	dst = append(dst, 'T')
	dst = appendDigits(dst, hour, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, min, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, sec, 2)
	dst = append(dst, '.')
	dst = appendDigits(dst, ticks, 7)
	return append(dst, 'Z', '"')
}

func appendDigits(dst []byte, v, width int) []byte {
	var buf [8]byte
	for i := width - 1; i >= 0; i-- {
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, buf[:width]...)
}

func appendBase64(dst []byte, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// appendString writes s as a JSON string. It returns the length of s in UTF-16 code units
// and ok=false if s is not valid UTF-8 (invalid bytes are written as U+FFFD).
func appendString(dst []byte, s string) (out []byte, units int, ok bool) {
	ok = true
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			units++
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			ok = false
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\\ufffd"...)
			units++
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			// Valid JSON, but a line separator to JavaScript: Azurite fails on them
			// unescaped in a $batch body. Escape them as encoding/json does.
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			units++
			i += size
			start = i
			continue
		}
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), units, ok
}

// bytesView returns b as a string without copying; the string must not outlive a change of b.
func bytesView(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}
