package repo

import (
	"reflect"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/suggest"
)

// checkSchema checks the property names of q's filter and projection against T's schema,
// and the EDM type of every filter value against the type T stores the property with, so
// that a misspelled name or a value of the wrong type fails before any request instead of
// matching nothing. Types with an extra field (codec.Entity among them) may hold any
// property: unknown names pass there, known ones are still type-checked.
func checkSchema[T any](c *codec.Codec[T], typeName string, q Query) error {
	open := c.OpenSchema()
	for _, term := range q.Filter.Terms() {
		p, ok := c.Property(term.Property)
		switch {
		case !ok && open:
			continue
		case !ok:
			return unknownProperty(c, typeName, "Query.Filter", term.Property)
		case p.Encrypted:
			return errs.Invalid(term.Property, "is an encrypted field of %s: it is stored as ciphertext, so a filter on it matches nothing (filter on a blind index of it instead)", typeName)
		case p.Type != term.Type:
			return errs.Invalid(term.Property, "is stored as %s by %s (field %s), but the filter compares it with an %s value, which never matches: %s",
				p.Type, typeName, goName(p), term.Type, hint(p.Type))
		}
	}
	if open {
		return nil
	}
	for _, name := range q.Select {
		if _, ok := c.Property(name); !ok {
			return unknownProperty(c, typeName, "Query.Select", name)
		}
	}
	return nil
}

func goName(p codec.PropertyInfo) string {
	if p.GoName == "" {
		return p.Name
	}
	return p.GoName
}

// hint says which Go value renders a literal of an EDM type (see filter.Eq).
func hint(edm string) string {
	switch edm {
	case "Edm.String":
		return "pass a string"
	case "Edm.Boolean":
		return "pass a bool"
	case "Edm.Int32":
		return "pass an int32 (or int)"
	case "Edm.Int64":
		return "pass an int64, e.g. int64(n)"
	case "Edm.Double":
		return "pass a float64, e.g. float64(n)"
	case "Edm.DateTime":
		return "pass a time.Time"
	case "Edm.Binary":
		return "pass a []byte"
	case "Edm.Guid":
		return "pass a filter.GUID"
	}
	return "pass a value of the stored type"
}

// unknownProperty is the error of a name T does not map, with the closest name T has.
func unknownProperty[T any](c *codec.Codec[T], typeName, where, name string) error {
	names := append([]string{"PartitionKey", "RowKey", "Timestamp"}, c.Properties()...)
	if stored, ok := c.PropertyName(name); ok && stored != name {
		return errs.Invalid(name, "is not a stored property of %s (%s): the Go field %s is stored as %q", typeName, where, name, stored)
	}
	best, bestD := "", len(name)/2+2
	for _, n := range names {
		if d := suggest.Distance(strings.ToLower(name), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	if best != "" {
		return errs.Invalid(name, "is not a property of %s (%s); did you mean %q?", typeName, where, best)
	}
	return errs.Invalid(name, "is not a property of %s (%s), whose properties are %s", typeName, where, strings.Join(names, ", "))
}

// schemaOf returns the query check of T's codec.
func schemaOf[T any](c *codec.Codec[T]) func(Query) error {
	name := reflect.TypeFor[T]().String()
	return func(q Query) error { return checkSchema(c, name, q) }
}
