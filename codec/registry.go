package codec

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"unsafe"
)

// Discriminator says where a Registry finds the type name of an entity.
type Discriminator int

const (
	// ByProperty keeps the type name in a string property (RegistryOptions.Property,
	// "EntityType" by default), as the design guide's second option does.
	ByProperty Discriminator = iota
	// ByRowKeyPrefix reads the type name from the RowKey up to the first separator:
	// "EMPLOYEE_000123" is of type "EMPLOYEE" with the separator "_".
	ByRowKeyPrefix
	// ByPartitionKeyPrefix is ByRowKeyPrefix on the PartitionKey.
	ByPartitionKeyPrefix
)

// RegistryOptions configures a Registry. The zero value is valid: an "EntityType" property,
// and an error for unknown types.
type RegistryOptions struct {
	// Discriminator selects where the type name is kept. Defaults to ByProperty.
	Discriminator Discriminator
	// Property is the name of the discriminator property (ByProperty only).
	// Defaults to "EntityType".
	Property string
	// Separator ends the type name inside the key (ByRowKeyPrefix, ByPartitionKeyPrefix).
	// Defaults to "_".
	Separator string
	// UnknownAsEntity makes Decode return an *Entity (with every property, the
	// discriminator included) for an entity whose type name is missing or not registered,
	// instead of an *UnknownEntityTypeError. Useful for tools that must pass every entity
	// through (archivers, exports).
	UnknownAsEntity bool
	// Encryption encrypts and decrypts the fields with the encrypt option of the registered
	// types (see Codec.WithEncryption). nil: a registered type with encrypted fields
	// cannot be encoded, and its entities cannot be decoded.
	Encryption *Encryption
}

func (o RegistryOptions) withDefaults() RegistryOptions {
	if o.Property == "" {
		o.Property = "EntityType"
	}
	if o.Separator == "" {
		o.Separator = "_"
	}
	return o
}

func (o RegistryOptions) validate() error {
	if o.Encryption != nil {
		if err := o.Encryption.validate(); err != nil {
			return err
		}
	}
	switch o.Discriminator {
	case ByProperty:
		if err := validatePropertyName("", o.Property); err != nil {
			err.Field = "RegistryOptions.Property"
			return err
		}
		if isSystemName(o.Property) {
			return invalid("", "RegistryOptions.Property", "a system property cannot be the discriminator")
		}
	case ByRowKeyPrefix, ByPartitionKeyPrefix:
		if err := validateKey("RegistryOptions.Separator", o.Separator); err != nil {
			return err
		}
	default:
		return invalid("", "RegistryOptions.Discriminator", "unknown discriminator kind")
	}
	return nil
}

// Registry maps type names to Go struct types, so that one query over a partition holding
// several kinds of entity (departments and their employees) decodes each entity into its
// own type. It is safe for concurrent use; register types before decoding.
//
// Type names are free-form strings and may carry a version ("Employee.v2"). A Go type may
// be registered under several names: the first is the one Encode writes, the others are
// aliases Decode accepts (older versions read into the current type).
type Registry struct {
	opts   RegistryOptions
	mu     sync.RWMutex
	byName map[string]*regEntry
	byType map[reflect.Type]*regEntry
}

type regEntry struct {
	name string // canonical name, written by Encode
	typ  reflect.Type
	p    *plan
	disc *discProp // ByProperty only
}

// NewRegistry returns an empty registry. It returns an *InvalidInputError if the options
// are invalid (a discriminator property that is not a valid custom property name, a
// separator that cannot appear in a key).
func NewRegistry(opts RegistryOptions) (*Registry, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Registry{opts: opts, byName: map[string]*regEntry{}, byType: map[reflect.Type]*regEntry{}}, nil
}

// Register maps name to the struct type T (see For for what T may be). Decode of an entity
// whose discriminator is name returns a *T.
//
// It returns an *InvalidInputError if T cannot be mapped, name is empty or already taken,
// name cannot appear in a key (prefix discriminators) or contains the separator, or T has a
// field stored under the discriminator property (the registry owns that property).
func Register[T any](r *Registry, name string) error {
	c, err := For[T]()
	if err != nil {
		return err
	}
	p := c.p
	if name == "" {
		return invalid(p.typeName, "", "empty entity type name")
	}
	switch r.opts.Discriminator {
	case ByProperty:
		if _, ok := utf16Units(name); !ok {
			return invalid(p.typeName, "", "entity type name is not valid UTF-8")
		}
		if f := p.byName[r.opts.Property]; f != nil {
			return invalid(p.typeName, f.goName, "field is stored as the discriminator property "+r.opts.Property+", which the registry writes itself: remove it or tag it table:\"-\"")
		}
	default:
		if strings.Contains(name, r.opts.Separator) {
			return invalid(p.typeName, "", "entity type name "+name+" contains the separator "+r.opts.Separator)
		}
		if err := validateKey(r.keyField(), name+r.opts.Separator); err != nil {
			err.Type = p.typeName
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, taken := r.byName[name]; taken {
		return invalid(p.typeName, "", "entity type name "+name+" is already registered")
	}
	e := r.byType[p.typ]
	if e == nil {
		e = &regEntry{name: name, typ: p.typ, p: p}
		if r.opts.Discriminator == ByProperty {
			e.disc = &discProp{name: r.opts.Property, value: name, annotKey: appendKey(nil, r.opts.Property)}
		}
		r.byType[p.typ] = e
	}
	r.byName[name] = e
	return nil
}

func (r *Registry) keyField() string {
	if r.opts.Discriminator == ByPartitionKeyPrefix {
		return "PartitionKey"
	}
	return "RowKey"
}

// discriminator finds the type name of an entity without decoding it.
func (r *Registry) discriminator(data []byte) (name, pk, rk string, err error) {
	s := scanner{d: data}
	if serr := s.begin(); serr != nil {
		return "", "", "", &DecodeError{Offset: serr.off, Reason: serr.reason}
	}
	var buf [64]byte
	found := false
	for first := true; ; first = false {
		nameTok, val, ok, serr := s.next(first)
		if serr != nil {
			return "", "", "", &DecodeError{Offset: serr.off, Reason: serr.reason}
		}
		if !ok {
			break
		}
		n := nameTok.text(buf[:0])
		if val.kind != vString {
			continue
		}
		switch {
		case string(n) == "PartitionKey":
			pk = val.string()
		case string(n) == "RowKey":
			rk = val.string()
		case r.opts.Discriminator == ByProperty && string(n) == r.opts.Property:
			name, found = val.string(), true
		}
	}
	switch r.opts.Discriminator {
	case ByRowKeyPrefix:
		name, _, found = strings.Cut(rk, r.opts.Separator)
	case ByPartitionKeyPrefix:
		name, _, found = strings.Cut(pk, r.opts.Separator)
	}
	if !found {
		name = ""
	}
	return name, pk, rk, nil
}

// Decode decodes one entity into a new value of the type registered for its discriminator
// and returns a pointer to it (*T). For an entity whose type name is missing or not
// registered it returns an *UnknownEntityTypeError (wrapping ErrUnknownEntityType), or an
// *Entity if RegistryOptions.UnknownAsEntity is set. Malformed JSON or values give a
// *DecodeError.
func (r *Registry) Decode(data []byte) (any, error) {
	name, pk, rk, err := r.discriminator(data)
	if err != nil {
		return nil, err
	}
	r.mu.RLock()
	e := r.byName[name]
	r.mu.RUnlock()
	if e == nil {
		if r.opts.UnknownAsEntity {
			return DecodeEntity(data)
		}
		return nil, &UnknownEntityTypeError{Name: name, PartitionKey: pk, RowKey: rk}
	}
	v := reflect.New(e.typ)
	skip := ""
	if r.opts.Discriminator == ByProperty {
		skip = r.opts.Property
	}
	if err := e.p.decode(context.Background(), data, v.UnsafePointer(), skip, r.opts.Encryption); err != nil {
		return nil, err
	}
	return v.Interface(), nil
}

// Encode returns the JSON body for writing v, a *T (or a T) of a registered type, as
// Codec.Encode does, with the discriminator property added (ByProperty). With a key-prefix
// discriminator the key must already start with the type name and the separator.
//
// It returns an *InvalidInputError for an unregistered type, a key without the type
// prefix, or a broken limit.
func (r *Registry) Encode(v any) ([]byte, error) {
	e, base, err := r.entry(v)
	if err != nil {
		return nil, err
	}
	switch r.opts.Discriminator {
	case ByRowKeyPrefix, ByPartitionKeyPrefix:
		pk, rk := e.p.keys(base)
		key := rk
		if r.opts.Discriminator == ByPartitionKeyPrefix {
			key = pk
		}
		if !strings.HasPrefix(key, e.name+r.opts.Separator) {
			return nil, invalid(e.p.typeName, r.keyField(), "key "+key+" does not start with the entity type prefix "+e.name+r.opts.Separator)
		}
	}
	return e.p.appendEncode(context.Background(), make([]byte, 0, 128+64*len(e.p.fields)), base, nil, e.disc, r.opts.Encryption)
}

// TypeName returns the name under which the type of v (a *T or a T) is written, and
// whether it is registered.
func (r *Registry) TypeName(v any) (string, bool) {
	t := reflect.TypeOf(v)
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if e := r.byType[t]; e != nil {
		return e.name, true
	}
	return "", false
}

func (r *Registry) entry(v any) (*regEntry, unsafe.Pointer, error) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return nil, nil, invalid("", "", "nil entity")
	}
	var base unsafe.Pointer
	t := rv.Type()
	if t.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil, nil, invalid(t.String(), "", "nil entity")
		}
		t, base = t.Elem(), rv.UnsafePointer()
	} else {
		pv := reflect.New(t)
		pv.Elem().Set(rv)
		base = pv.UnsafePointer()
	}
	r.mu.RLock()
	e := r.byType[t]
	r.mu.RUnlock()
	if e == nil {
		return nil, nil, invalid(t.String(), "", "type is not registered")
	}
	return e, base, nil
}
