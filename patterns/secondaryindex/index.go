package secondaryindex

import (
	"errors"
	"fmt"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Index describes one access path to entities of type T: a name, which is also the key
// prefix of its copies ("email" gives the guide's "email_jonesj@contoso.com" in Intra and
// "email_Sales" in Inter), and the value it sorts and finds entities by.
type Index[T any] struct {
	// Name names the index and prefixes its keys: 1 to 64 ASCII letters and digits
	// (no "_", which separates the name from the value).
	Name string
	// Value returns the indexed value of v. An empty value means that v has no entry in
	// this index (like a NULL in a unique SQL index). Values are compared as strings: pad
	// numbers to a fixed width (keys.Pad) so that ranges and order are numeric. Value must
	// be a pure function of v.
	Value func(v *T) string
	// AllowDuplicates lets several entities share a value. By default an index is unique:
	// Intra refuses a write that would give a second entity the same value. Inter cannot
	// refuse it (the copies are written later) and keys every copy by value and source
	// RowKey anyway; see the package documentation.
	AllowDuplicates bool
	// Normalize, if set, maps every value of the index before it is used: the value of an
	// entity on every write, and the value asked for on every read by value (Lookup, Find,
	// and the bounds of Range and Prefix; Get takes a stored key, made of the normalized
	// value). strings.ToLower makes an email index that stores
	// "ann@example.com" find the entity when asked for "Ann@Example.com". It must be a pure
	// function. Keys are made of normalized values, so changing Normalize changes every
	// key: rebuild the index after changing it (Repair each partition: it writes the
	// copies under the new keys and deletes the old ones as orphans).
	// nil keeps values as they are.
	Normalize func(value string) string
	// Properties lists the properties the index's copies carry (stored names or Go field
	// names), for the guide's copies that hold only what their queries need. nil copies
	// every property. A value read through such an index has the other fields zero.
	Properties []string
	// Table is the table that holds the copies of an Inter index. Defaults to the primary's
	// table. Intra refuses it: its copies must share the primary's partition.
	Table string
}

// maxNameLen bounds index names so that a key prefix never eats much of the 1 KiB key.
const maxNameLen = 64

// sep separates an index name from the value in keys, as in the guide's "empid_000223".
const sep = "_"

// index is an Index checked and prepared for use.
type index[T any] struct {
	Index[T]
	// props holds the stored names of Properties; nil means every property.
	props map[string]bool
}

func compile[T any](c *codec.Codec[T], ix Index[T], seen map[string]bool) (*index[T], error) {
	field := fmt.Sprintf("index %q", ix.Name)
	if ix.Name == "" || len(ix.Name) > maxNameLen {
		return nil, errs.Invalid("Index.Name", "must have 1 to %d characters, got %q", maxNameLen, ix.Name)
	}
	for _, r := range ix.Name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return nil, errs.Invalid("Index.Name", "%q: only ASCII letters and digits are allowed", ix.Name)
		}
	}
	if seen[ix.Name] {
		return nil, errs.Invalid("Index.Name", "%q is used by two indexes", ix.Name)
	}
	seen[ix.Name] = true
	if ix.Value == nil {
		return nil, errs.Invalid(field, "has no Value function")
	}
	out := &index[T]{Index: ix}
	if ix.Properties != nil && c.Encrypted() {
		// The entity's encryption metadata lists every encrypted property: a copy that
		// leaves some out would read as tampered.
		return nil, errs.Invalid(field, "Properties: a copy of an entity type with encrypted fields carries every property")
	}
	if ix.Properties != nil {
		out.props = make(map[string]bool, len(ix.Properties))
		for _, p := range ix.Properties {
			name, ok := c.PropertyName(p)
			if !ok || name == "PartitionKey" || name == "RowKey" || name == "Timestamp" {
				return nil, errs.Invalid(field, "Properties: %q is not a property of the entity type", p)
			}
			out.props[name] = true
		}
	}
	return out, nil
}

// norm applies Normalize to a value.
func (ix *index[T]) norm(s string) string {
	if ix.Normalize == nil || s == "" {
		return s
	}
	return ix.Normalize(s)
}

// valueOf returns v's indexed value, normalized, unchecked.
func (ix *index[T]) valueOf(v *T) string { return ix.norm(ix.Value(v)) }

// value returns v's indexed value, normalized, and checks that it can be part of a key.
func (ix *index[T]) value(v *T) (string, error) {
	s := ix.valueOf(v)
	if s == "" {
		return "", nil
	}
	if err := keys.Validate(s); err != nil {
		return "", ix.invalid(err)
	}
	return s, nil
}

// intraKey is the RowKey of v's copy in an Intra index: the guide's "email_jonesj@contoso.com"
// for a unique index; for an index with duplicates the value is followed by the primary
// value, both escaped (keys.Join), so that keys stay unique and sort by value first.
func (ix *index[T]) intraKey(value, primary string) (string, error) {
	var rk string
	if ix.AllowDuplicates {
		rk = ix.Name + sep + keys.Join(value, primary)
	} else {
		rk = ix.Name + sep + value
	}
	if err := codec.ValidateKey("RowKey", rk); err != nil {
		return "", ix.invalid(err)
	}
	return rk, nil
}

// intraBounds returns the RowKey range [lo, hi) of the copies whose values are in
// [from, to) ("" for an open end).
func (ix *index[T]) intraBounds(from, to string) (lo, hi string) {
	prefix := ix.Name + sep
	enc := func(s string) string {
		if ix.AllowDuplicates {
			return keys.Join(s)
		}
		return s
	}
	lo = prefix + enc(from)
	if to != "" {
		hi = prefix + enc(to)
	} else {
		_, hi = keys.PrefixRange(prefix)
	}
	return lo, hi
}

// invalid rewrites a key or value refusal so that it names the index.
func (ix *index[T]) invalid(err error) error {
	var ie *errs.InvalidInputError
	if !errors.As(err, &ie) {
		return err
	}
	out := *ie
	out.Field = fmt.Sprintf("index %q", ix.Name)
	if ie.Field != "" {
		out.Reason = ie.Field + ": " + ie.Reason
	}
	return &out
}

// project returns v as a dynamic entity with the given keys, keeping only the properties
// the index's copies carry (all when props is nil).
func project[T any](c *codec.Codec[T], v *T, pk, rk string, props map[string]bool) (*codec.Entity, error) {
	// Encode a copy under the copy's own keys: encrypted properties are bound to the keys
	// they were encoded with, so re-keying an encoded entity would make it read as tampered.
	cp := *v
	c.SetKeys(&cp, pk, rk)
	body, err := c.Encode(&cp)
	if err != nil {
		return nil, err
	}
	e, err := codec.DecodeEntity(body)
	if err != nil {
		return nil, err
	}
	if props != nil {
		for name := range e.Properties {
			if !props[name] {
				delete(e.Properties, name)
			}
		}
	}
	return e, nil
}

// ErrUniqueViolation is wrapped by a *UniqueViolationError.
var ErrUniqueViolation = errors.New("secondaryindex: unique index violation")

// UniqueViolationError reports a write refused because another entity of the partition
// already holds the value in a unique index. The whole transaction was rolled back: no copy
// was written. It unwraps to ErrUniqueViolation and to the transaction's *repo.ActionError
// (so errors.Is(err, errs.ErrAlreadyExists) holds too: at the storage level the copy
// already exists).
type UniqueViolationError struct {
	// Index names the unique index.
	Index string
	// PartitionKey is the partition and Value the value already taken.
	PartitionKey, Value string
	// Err is the transaction's error.
	Err error
}

// Error implements error.
func (e *UniqueViolationError) Error() string {
	return fmt.Sprintf("secondaryindex: partition %q already has an entity with %s %q (unique index)", e.PartitionKey, e.Index, e.Value)
}

// Unwrap returns ErrUniqueViolation and the transaction's error.
func (e *UniqueViolationError) Unwrap() []error { return []error{ErrUniqueViolation, e.Err} }

// defaultSafetyDelay is InterOptions.SafetyDelay's default.
const defaultSafetyDelay = 5 * time.Minute
