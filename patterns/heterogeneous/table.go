package heterogeneous

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Options configures a Table. The zero value (or nil) gives the documented defaults.
type Options struct {
	// Registry says where the entity type is kept: by default a property "EntityType" (the
	// guide's second option), or a prefix of the RowKey or PartitionKey
	// ("EMPLOYEE_000123", the guide's first option).
	Registry codec.RegistryOptions
	// Conflict is the backoff of the one-to-many loops that lost a race to another writer.
	// Zero fields take retry.Conflict()'s values, field by field; its Logger defaults
	// to the table's.
	Conflict retry.Policy
}

// Table is one table holding entities of several Go types, each registered under a type
// name (the design guide's "Work with heterogeneous entity types"). Every write goes
// through the registry, so the discriminator is always stored, and every read decodes
// each entity into the type its discriminator names. A Table is safe for concurrent use once its
// types are registered.
type Table struct {
	name  string
	reg   *codec.Registry
	ropts codec.RegistryOptions // with defaults
	dyn   *repo.Table[codec.Entity]
	// conflict is the backoff of the one-to-many loops that lost a race (Options.Conflict).
	conflict retry.Policy
	mu       sync.RWMutex
	names    map[reflect.Type][]string // every name of each registered type, canonical first
}

// New returns the Table of heterogeneous entities over table, a table of dynamic entities:
// its retry policy, logger and write tracking are the Table's. Register the types with
// Register before use. It sends nothing.
//
// Reads never show the table's write-tracking property (repo.GetFunc and repo.QueryFunc
// remove it before decoding), so a type with an extra map does not capture the history
// and write it back as its own.
//
// Errors: errs.ErrInvalidInput for a nil table or invalid options: among them a
// discriminator property named like the table's write-tracking property, or a
// Registry.Encryption bound to another table.
func New(table *repo.Table[codec.Entity], opts *Options) (*Table, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if table == nil {
		return nil, errs.Invalid("table", "is nil")
	}
	reg, err := codec.NewRegistry(o.Registry)
	if err != nil {
		return nil, err
	}
	ro := o.Registry
	if ro.Property == "" {
		ro.Property = "EntityType"
	}
	if ro.Separator == "" {
		ro.Separator = "_"
	}
	// The table's write history is appended to every tracked write: the discriminator
	// must not share its name, or each write would carry that name twice.
	if tp := table.WriteIDProperty(); tp != "" && ro.Discriminator == codec.ByProperty && ro.Property == tp {
		return nil, errs.Invalid("Options.Registry.Property", "%q is the table's write-tracking property (repo.Options.WriteIDProperty): choose another discriminator name", tp)
	}
	if e := ro.Encryption; e != nil && e.Table != "" && !strings.EqualFold(e.Table, table.Name()) {
		return nil, errs.Invalid("Options.Registry.Encryption.Table", "binds entities to table %q, not to this table %q", e.Table, table.Name())
	}
	conflict := o.Conflict.Or(retry.Policy{Logger: table.Logger()}.Or(retry.Conflict()))
	if err := conflict.Validate(); err != nil {
		return nil, err
	}
	return &Table{name: table.Name(), reg: reg, ropts: ro, dyn: table, conflict: conflict, names: map[reflect.Type][]string{}}, nil
}

// Register maps the type name to the struct type T: entities written as T carry name,
// and entities carrying name are read as *T. Register every type before the first read
// or write; a Go type may be registered under several names, the first being the one
// written (entities carrying the other names are read into T as well).
//
// Errors: errs.ErrInvalidInput (see codec.Register: T cannot be mapped, the name is taken,
// cannot appear in a key, or T has a field stored under the discriminator property or
// under the table's write-tracking property).
func Register[T any](t *Table, name string) error {
	if tp := t.dyn.WriteIDProperty(); tp != "" {
		c, err := codec.For[T]()
		if err != nil {
			return err
		}
		if _, maps := c.Property(tp); maps {
			return errs.Invalid(typeName[T](), "stores a field as %q, the table's write-tracking property (repo.Options.WriteIDProperty), which the table writes itself", tp)
		}
	}
	if err := codec.Register[T](t.reg, name); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	typ := reflect.TypeFor[T]()
	t.names[typ] = append(t.names[typ], name)
	return nil
}

// Name returns the table's name.
func (t *Table) Name() string { return t.name }

// Table returns the underlying table of dynamic entities.
func (t *Table) Table() *repo.Table[codec.Entity] { return t.dyn }

// Registry returns the table's type registry.
func (t *Table) Registry() *codec.Registry { return t.reg }

// CreateIfNotExists creates the table (see repo.Table.CreateIfNotExists).
//
// Errors: as repo.Table.CreateIfNotExists.
func (t *Table) CreateIfNotExists(ctx context.Context) error { return t.dyn.CreateIfNotExists(ctx) }

// TypeMismatchError is returned by Get when the entity at the keys is of another
// registered type (or of none). It unwraps to ErrTypeMismatch.
type TypeMismatchError struct {
	PartitionKey, RowKey string
	// Want is the Go type asked for, Got the type name the entity carries.
	Want, Got string
}

// ErrTypeMismatch is wrapped by every *TypeMismatchError.
var ErrTypeMismatch = errors.New("heterogeneous: the entity is of another type")

// Error implements error.
func (e *TypeMismatchError) Error() string {
	return fmt.Sprintf("heterogeneous: entity (%q, %q) is a %q, not a %s", e.PartitionKey, e.RowKey, e.Got, e.Want)
}

// Unwrap returns ErrTypeMismatch.
func (e *TypeMismatchError) Unwrap() error { return ErrTypeMismatch }

// Get reads the entity (pk, rk), which must be of type T, with one point query.
//
// Errors: errs.ErrNotFound, *TypeMismatchError (an entity of another type, or of an
// unregistered one), errs.ErrInvalidInput (T not registered, bad keys; nothing sent),
// errs.ErrTransient, *errs.ServiceError, *codec.DecodeError.
func Get[T any](ctx context.Context, t *Table, pk, rk string) (T, error) {
	var zero T
	c, err := registered[T](t)
	if err != nil {
		return zero, err
	}
	out, err := repo.GetFunc(ctx, t.dyn, pk, rk, func(data []byte, etag string) (any, error) {
		out, err := t.reg.Decode(data)
		if err != nil {
			return nil, err
		}
		if v, ok := out.(*T); ok && c.ETag(v) == "" {
			c.SetETag(v, etag)
		}
		return out, nil
	})
	var unknown *codec.UnknownEntityTypeError
	if errors.As(err, &unknown) {
		return zero, &TypeMismatchError{PartitionKey: pk, RowKey: rk, Want: typeName[T](), Got: unknown.Name}
	}
	if err != nil {
		return zero, err
	}
	v, ok := out.(*T)
	if !ok {
		got, _ := t.reg.TypeName(out)
		return zero, &TypeMismatchError{PartitionKey: pk, RowKey: rk, Want: typeName[T](), Got: got}
	}
	return *v, nil
}

func typeName[T any]() string { return fmt.Sprintf("%T", *new(T)) }

// registered returns T's codec, or an error if T is not registered in t.
func registered[T any](t *Table) (*codec.Codec[T], error) {
	if _, ok := t.reg.TypeName(new(T)); !ok {
		return nil, errs.Invalid("entity type", "%s is not registered in the table's registry: call Register", typeName[T]())
	}
	return codec.For[T]()
}

// Query returns the entities matching q, each decoded into the type its discriminator
// names (a *T of a registered type, as codec.Registry.Decode returns): one query over a
// partition yields the department and its employees, each in its own Go type. It follows
// continuation tokens (repo.QueryFunc does the paging), and resumes from q.Token, a
// repo.Page.Token of the same filter. When q.Select is set, the keys and the discriminator property are added.
//
// Errors (yielded): errs.ErrInvalidInput (the query; nothing sent), *codec.UnknownEntityTypeError
// for an entity of an unregistered type (unless RegistryOptions.UnknownAsEntity, which
// yields it as a *codec.Entity), *codec.DecodeError, errs.ErrNotFound (no such table),
// errs.ErrTransient, *errs.ServiceError.
func (t *Table) Query(ctx context.Context, q repo.Query) iter.Seq2[any, error] {
	if q.Select != nil {
		// The keys and the discriminator are needed to decode any entity.
		sel := append([]string{"PartitionKey", "RowKey"}, q.Select...)
		if t.ropts.Discriminator == codec.ByProperty {
			sel = append(sel, t.ropts.Property)
		}
		slices.Sort(sel)
		q.Select = slices.Compact(sel)
	}
	return repo.QueryFunc(ctx, t.dyn, q, t.reg.Decode)
}

// QueryOf returns the entities of type T among those matching q, in key order: the
// discriminator is added to the filter (EntityType eq 'Employee', or the RowKey or
// PartitionKey range of the type's prefix; one such condition per name T is registered
// under), so that entities of other types are not even read.
//
// Errors (yielded): errs.ErrInvalidInput (T not registered, the query; nothing sent), and those
// of Query.
func QueryOf[T any](ctx context.Context, t *Table, q repo.Query) iter.Seq2[*T, error] {
	return func(yield func(*T, error) bool) {
		if _, err := registered[T](t); err != nil {
			yield(nil, err)
			return
		}
		t.mu.RLock()
		names := t.names[reflect.TypeFor[T]()]
		t.mu.RUnlock()
		alts := make([]filter.Expr, len(names))
		for i, name := range names {
			switch t.ropts.Discriminator {
			case codec.ByProperty:
				alts[i] = filter.Eq(t.ropts.Property, name)
			default:
				key := "RowKey"
				if t.ropts.Discriminator == codec.ByPartitionKeyPrefix {
					key = "PartitionKey"
				}
				lo, hi := keys.PrefixRange(name + t.ropts.Separator)
				alts[i] = filter.And(filter.Ge(key, lo), filter.Lt(key, hi))
			}
		}
		f := filter.Or(alts...)
		q.Filter = filter.And(q.Filter, f)
		for v, err := range t.Query(ctx, q) {
			if err != nil {
				yield(nil, err)
				return
			}
			typed, ok := v.(*T)
			if !ok {
				continue // an alias registered to another type cannot match; be safe
			}
			if !yield(typed, nil) {
				return
			}
		}
	}
}
