package codec

import (
	"encoding"
	"reflect"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// fkind is how a property is stored; together with field.rk (the Go kind of the value) it
// selects the encoder and decoder of a field.
type fkind uint8

const (
	fString fkind = iota + 1 // Edm.String
	fBool                    // Edm.Boolean
	fInt32                   // Edm.Int32: int8, int16, int32, uint8, uint16
	fInt64                   // Edm.Int64: int, int64, uint32
	fDouble                  // Edm.Double: float32, float64
	fTime                    // Edm.DateTime: time.Time
	fBinary                  // Edm.Binary: []byte
	fGUID                    // Edm.Guid: GUID
	fText                    // Edm.String through encoding.TextMarshaler / TextUnmarshaler
	fJSON                    // Edm.String holding encoding/json output (the json option)
)

var (
	timeType      = reflect.TypeFor[time.Time]()
	guidType      = reflect.TypeFor[GUID]()
	extraType     = reflect.TypeFor[map[string]any]()
	marshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	unmarshalType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// hop is one embedded *Struct on the way to a field: the offset of the pointer in the
// struct that holds it, and the struct type to allocate when decoding into a nil pointer.
type hop struct {
	off uintptr
	typ reflect.Type
}

// loc locates a field inside the top-level struct: through zero or more embedded pointers,
// then at a fixed offset. Fields of embedded non-pointer structs need no hop.
type loc struct {
	hops []hop
	off  uintptr
}

// addr returns the address of the field, or nil if an embedded pointer on the way is nil
// and alloc is false. With alloc, nil embedded pointers are allocated.
func (l *loc) addr(base unsafe.Pointer, alloc bool) unsafe.Pointer {
	p := base
	for _, h := range l.hops {
		pp := (*unsafe.Pointer)(unsafe.Add(p, h.off))
		if *pp == nil {
			if !alloc {
				return nil
			}
			*pp = reflect.New(h.typ).UnsafePointer()
		}
		p = *pp
	}
	return unsafe.Add(p, l.off)
}

// field is the precomputed plan of one property.
type field struct {
	loc
	name      string       // stored property name
	goName    string       // Go field name (for errors and PropertyName)
	kind      fkind        // storage kind
	rk        reflect.Kind // Go kind of the value (after the optional pointer)
	typ       reflect.Type // Go type of the value (after the optional pointer)
	ptr       bool         // *T: nil means absent
	omitEmpty bool
	key       []byte // `"Name":`
	annot     []byte // `"Name@odata.type":"Edm.X",` or nil
	nameBytes int    // 2 * UTF-16 length of the name, for the entity size
	// encrypt marks a property stored encrypted (the encrypt option): annot then says
	// Edm.Binary, and plain renders the plaintext value (no name, no annotation).
	encrypt bool
	plain   *field
	// sign marks a plaintext property authenticated by the encryption metadata (the sign
	// option); plain then renders its canonical value for the digest.
	sign bool
}

// plan is the non-generic core of a Codec: everything precomputed for one struct type.
type plan struct {
	typ      reflect.Type
	typeName string

	pk, rk   loc
	etag, ts *loc
	extra    *loc

	fields []*field
	byName map[string]*field // stored property name -> field
	byGo   map[string]string // Go field name -> stored property name (incl. system fields)
	sel    []string          // $select list
	// encrypted counts the fields with the encrypt option; such a type gets the
	// EncryptionMetadataProperty on every entity.
	encrypted int
	// signed lists the fields with the sign option, in declaration order.
	signed []*field
}

var (
	plans  sync.Map // reflect.Type -> *plan
	codecs sync.Map // reflect.Type -> *Codec[T]
)

func planFor(t reflect.Type) (*plan, error) {
	if p, ok := plans.Load(t); ok {
		return p.(*plan), nil
	}
	p, err := buildPlan(t)
	if err != nil {
		return nil, err
	}
	actual, _ := plans.LoadOrStore(t, p)
	return actual.(*plan), nil
}

type tagOpts struct {
	pk, rk, etag, timestamp, omitEmpty, json, extra, encrypt, sign bool
}

func parseTag(tag string) (name string, o tagOpts, bad string) {
	name, rest, _ := strings.Cut(tag, ",")
	for rest != "" {
		var opt string
		opt, rest, _ = strings.Cut(rest, ",")
		switch opt {
		case "pk":
			o.pk = true
		case "rk":
			o.rk = true
		case "etag":
			o.etag = true
		case "timestamp":
			o.timestamp = true
		case "omitempty":
			o.omitEmpty = true
		case "json":
			o.json = true
		case "extra":
			o.extra = true
		case "encrypt":
			o.encrypt = true
		case "sign":
			o.sign = true
		case "":
		default:
			if bad == "" {
				bad = opt
			}
		}
	}
	return name, o, bad
}

type builder struct {
	p      *plan
	pkSeen bool
	rkSeen bool
	goSeen map[string]bool
}

func buildPlan(t reflect.Type) (*plan, error) {
	p := &plan{typ: t, typeName: t.String(), byName: map[string]*field{}, byGo: map[string]string{}}
	if t.Kind() != reflect.Struct {
		return nil, invalid(p.typeName, "", "not a struct type (Codec maps a struct to an entity)")
	}
	b := &builder{p: p, goSeen: map[string]bool{}}
	if err := b.walk(t, nil, 0, map[reflect.Type]bool{t: true}); err != nil {
		return nil, err
	}
	if !b.pkSeen {
		return nil, invalid(p.typeName, "PartitionKey", `no PartitionKey field (name a string field PartitionKey or tag one table:",pk")`)
	}
	if !b.rkSeen {
		return nil, invalid(p.typeName, "RowKey", `no RowKey field (name a string field RowKey or tag one table:",rk")`)
	}
	if len(p.signed) > 0 && p.encrypted == 0 {
		return nil, invalid(p.typeName, p.signed[0].goName, "the sign option needs at least one field with the encrypt option: the signature lives in the encryption metadata")
	}
	props := len(p.fields)
	if p.encrypted > 0 {
		props++ // the encryption metadata
		if f := p.byName[EncryptionMetadataProperty]; f != nil {
			return nil, invalid(p.typeName, f.goName, "property name "+EncryptionMetadataProperty+" is reserved for the encryption metadata of a type with encrypted fields")
		}
	}
	if props > MaxProperties {
		return nil, tooLarge(p.typeName, "", "more properties than an entity may have", props, MaxProperties)
	}
	p.sel = append(p.sel, "PartitionKey", "RowKey")
	if p.ts != nil {
		p.sel = append(p.sel, "Timestamp")
	}
	for _, f := range p.fields {
		p.sel = append(p.sel, f.name)
	}
	if p.encrypted > 0 {
		p.sel = append(p.sel, EncryptionMetadataProperty)
	}
	return p, nil
}

func (b *builder) walk(t reflect.Type, hops []hop, base uintptr, visiting map[reflect.Type]bool) error {
	p := b.p
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("table")
		if tag == "-" {
			continue
		}
		name, opts, bad := parseTag(tag)
		if bad != "" {
			return invalid(p.typeName, sf.Name, "unknown tag option "+`"`+bad+`"`)
		}
		if sf.Anonymous && name == "" && !opts.json {
			ft := sf.Type
			isPtr := ft.Kind() == reflect.Pointer
			if isPtr {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && ft != timeType && !ft.Implements(marshalerType) && !reflect.PointerTo(ft).Implements(marshalerType) {
				if isPtr && !sf.IsExported() {
					continue // cannot be allocated by a decoder: ignored, as encoding/json does
				}
				if visiting[ft] {
					return invalid(p.typeName, sf.Name, "embedded struct cycle")
				}
				visiting[ft] = true
				var err error
				if isPtr {
					h := append(append([]hop(nil), hops...), hop{off: base + sf.Offset, typ: ft})
					err = b.walk(ft, h, 0, visiting)
				} else {
					err = b.walk(ft, hops, base+sf.Offset, visiting)
				}
				delete(visiting, ft)
				if err != nil {
					return err
				}
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if err := b.addField(sf, name, opts, loc{hops: hops, off: base + sf.Offset}); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) addField(sf reflect.StructField, name string, opts tagOpts, l loc) error {
	p := b.p
	ft := sf.Type
	if b.goSeen[sf.Name] {
		// Two fields with one Go name (through embedding): PropertyName would be ambiguous.
		return invalid(p.typeName, sf.Name, "two fields named "+sf.Name+" (through embedded structs); tag one table:\"-\"")
	}
	b.goSeen[sf.Name] = true
	if opts.encrypt && (opts.pk || opts.rk || opts.etag || opts.timestamp || opts.extra ||
		name == "PartitionKey" || name == "RowKey" || name == "Timestamp" || (name == "ETag" && ft.Kind() == reflect.String && !opts.json)) {
		// The keys address the entity and the service writes Timestamp and ETag: none of
		// them can be encrypted (the design guide, "Encrypting table data").
		return invalid(p.typeName, sf.Name, "the encrypt option applies to properties only: PartitionKey, RowKey, Timestamp, ETag and the extra map are never encrypted")
	}
	if opts.sign && (opts.encrypt || opts.pk || opts.rk || opts.etag || opts.timestamp || opts.extra ||
		name == "PartitionKey" || name == "RowKey" || name == "Timestamp" || (name == "ETag" && ft.Kind() == reflect.String && !opts.json)) {
		// The keys are bound by every signature already; encrypted values are authenticated.
		return invalid(p.typeName, sf.Name, "the sign option applies to plaintext properties only: PartitionKey and RowKey are always bound, encrypted fields are authenticated, Timestamp, ETag and the extra map cannot be signed")
	}
	switch {
	case opts.pk || (name == "PartitionKey" && !opts.rk):
		if ft.Kind() != reflect.String {
			return invalid(p.typeName, sf.Name, "the PartitionKey field must be a string, not "+ft.String())
		}
		if b.pkSeen {
			return invalid(p.typeName, sf.Name, "more than one PartitionKey field")
		}
		b.pkSeen, p.pk = true, l
		p.byGo[sf.Name] = "PartitionKey"
		return nil
	case opts.rk || name == "RowKey":
		if ft.Kind() != reflect.String {
			return invalid(p.typeName, sf.Name, "the RowKey field must be a string, not "+ft.String())
		}
		if b.rkSeen {
			return invalid(p.typeName, sf.Name, "more than one RowKey field")
		}
		b.rkSeen, p.rk = true, l
		p.byGo[sf.Name] = "RowKey"
		return nil
	case opts.etag || (name == "ETag" && ft.Kind() == reflect.String && !opts.json):
		if ft.Kind() != reflect.String {
			return invalid(p.typeName, sf.Name, "the etag field must be a string, not "+ft.String())
		}
		if p.etag != nil {
			return invalid(p.typeName, sf.Name, "more than one etag field")
		}
		p.etag = &l
		return nil
	case opts.timestamp || name == "Timestamp":
		if ft != timeType {
			return invalid(p.typeName, sf.Name, "the Timestamp field must be a time.Time, not "+ft.String())
		}
		if p.ts != nil {
			return invalid(p.typeName, sf.Name, "more than one Timestamp field")
		}
		p.ts = &l
		p.byGo[sf.Name] = "Timestamp"
		return nil
	case opts.extra:
		if ft.Kind() != reflect.Map || ft.Key().Kind() != reflect.String || ft.Elem() != extraType.Elem() || !ft.ConvertibleTo(extraType) {
			return invalid(p.typeName, sf.Name, "the extra field must be a map[string]any, not "+ft.String())
		}
		if p.extra != nil {
			return invalid(p.typeName, sf.Name, "more than one extra field")
		}
		p.extra = &l
		return nil
	}
	if err := validatePropertyName(p.typeName, name); err != nil {
		err.Field = sf.Name
		err.Reason = "property " + `"` + name + `": ` + err.Reason
		return err
	}
	if _, dup := p.byName[name]; dup {
		return invalid(p.typeName, sf.Name, "duplicate property name "+`"`+name+`"`)
	}
	f := &field{loc: l, name: name, goName: sf.Name, omitEmpty: opts.omitEmpty}
	if err := classify(f, ft, opts.json); err != "" {
		return invalid(p.typeName, sf.Name, err)
	}
	units, _ := utf16Units(name)
	f.nameBytes = 2 * units
	f.key = []byte(`"` + name + `":`)
	if opts.encrypt {
		plain := *f
		plain.key, plain.annot = nil, nil
		f.plain = &plain // rendered without name or annotation: the plaintext to seal
		f.encrypt = true
		f.annot = []byte(`"` + name + `@odata.type":"Edm.Binary",`)
		p.encrypted++
	} else if edm := f.edmAnnotation(); edm != "" {
		f.annot = []byte(`"` + name + `@odata.type":"` + edm + `",`)
	}
	if opts.sign {
		plain := *f
		plain.key, plain.annot = nil, nil
		f.plain = &plain // rendered without name or annotation: the value to digest
		f.sign = true
		p.signed = append(p.signed, f)
	}
	p.fields = append(p.fields, f)
	p.byName[name] = f
	p.byGo[sf.Name] = name
	return nil
}

// classify sets kind, rk, typ and ptr of f from the Go type, or says why it cannot be stored.
func classify(f *field, t reflect.Type, asJSON bool) string {
	if asJSON {
		switch t.Kind() {
		case reflect.Chan, reflect.Func, reflect.UnsafePointer, reflect.Complex64, reflect.Complex128:
			return "type " + t.String() + " cannot be JSON-encoded"
		}
		f.kind, f.typ, f.rk = fJSON, t, t.Kind()
		return ""
	}
	if t.Kind() == reflect.Pointer {
		f.ptr = true
		t = t.Elem()
		if t.Kind() == reflect.Pointer {
			return "pointer to pointer is not supported"
		}
	}
	f.typ, f.rk = t, t.Kind()
	switch {
	case t == timeType:
		f.kind = fTime
		return ""
	case t == guidType:
		f.kind = fGUID
		return ""
	case (t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType)) && reflect.PointerTo(t).Implements(unmarshalType):
		f.kind = fText
		return ""
	case t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType):
		return "type " + t.String() + " implements encoding.TextMarshaler but not TextUnmarshaler (on its pointer): it could not be decoded"
	}
	switch t.Kind() {
	case reflect.String:
		f.kind = fString
	case reflect.Bool:
		f.kind = fBool
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16:
		f.kind = fInt32
	case reflect.Int, reflect.Int64, reflect.Uint32:
		f.kind = fInt64
	case reflect.Float32, reflect.Float64:
		f.kind = fDouble
	case reflect.Slice:
		if t.Elem().Kind() != reflect.Uint8 {
			return "type " + t.String() + " has no table type: use the json option"
		}
		f.kind = fBinary
	case reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return "type " + t.String() + " does not fit Edm.Int64 (values above 2^63-1): use int64, or a string"
	case reflect.Struct, reflect.Map, reflect.Array:
		return "type " + t.String() + " has no table type: use the json option or flatten it"
	default:
		return "type " + t.String() + " cannot be stored in a table"
	}
	return ""
}

// edmAnnotation is the "@odata.type" a value of f needs: none for the types JSON carries
// by itself (strings, booleans, Int32).
func (f *field) edmAnnotation() string {
	switch f.kind {
	case fString, fText, fJSON, fBool, fInt32:
		return ""
	}
	return f.kind.edm()
}
