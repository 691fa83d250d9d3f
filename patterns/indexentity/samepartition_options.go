package indexentity

import (
	"fmt"
	"unicode/utf8"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// SamePartitionOptions configures a SamePartition index. nil means the zero value, whose
// every field is its documented default.
type SamePartitionOptions struct {
	// Normalize, if set, maps every value before it is used: the value of an entity on
	// every write, and the value asked for by IDs and Find. strings.ToLower makes an
	// index of emails find "ann@example.com" when asked for "Ann@Example.com". It must be a
	// pure function. Index entities are keyed by normalized values: changing Normalize
	// needs a rebuild of the index. nil keeps values as they are.
	Normalize func(value string) string
	// PageBytes is the most UTF-16 bytes of ids one index entity holds before the list
	// spills into the next entity. Defaults to DefaultPageBytes (64 KiB, the limit of a
	// string property); at least 64.
	PageBytes int
	// Concurrency bounds the point queries of Find. Defaults to DefaultConcurrency.
	Concurrency int
	// Conflict is the backoff of the read-modify-write loop when another writer changed an
	// index entity first. Zero fields take retry.Conflict()'s values; its Logger defaults
	// to the table's.
	Conflict retry.Policy
	// Queue carries the backfill jobs of StartBackfill and Register. Defaults to nil: no
	// jobs (BackfillPartition, Verify and Repair run from code all the same).
	Queue *queueworker.Client
}

// SamePartition is option 2 of the guide's index entities pattern: for each value of an
// indexed property (a last name) and each partition (a department), index entities in that
// same partition list the RowKeys (employee ids) of the entities with that value. Every
// write of an entity and of its index entities is one entity group transaction,
// conditional on the ETags read just before; when another writer got there first the
// write is planned again from a fresh read, with jittered backoff. See the package
// documentation for the layout, the consistency and the cost.
//
// Write entities only through Insert, Update and Delete: a write through the table alone
// leaves the index behind. A SamePartition is safe for concurrent use.
type SamePartition[T any] struct {
	primary  *repo.Table[T]
	codec    *codec.Codec[T]
	pages    pageStore
	name     string
	value    func(*T) string // normalized
	norm     func(string) string
	conc     int
	conflict retry.Policy
	lo, hi   string              // the RowKeys of this index's entities, in every partition
	queue    *queueworker.Client // SamePartitionOptions.Queue

	seams seams // set by tests only
}

const maxNameChars = 64

// NewSamePartition returns the option 2 index named name (e.g. "LastName": index entities
// have RowKeys "idx!<name>!<value>!<page>", escaped as codec/keys.Join does; 1 to 64
// characters) over the entities of table, by value (the indexed value of an entity, e.g.
// its last name; "" means not indexed; a pure function). The index entities live in
// table; the logger is the table's. Nothing is sent.
//
// Errors: errs.ErrInvalidInput when table or value is nil, T has no ETag field (the pattern
// relies on optimistic concurrency), name is empty or too long, or an option is out of
// range.
func NewSamePartition[T any](table *repo.Table[T], name string, value func(v *T) string, opts *SamePartitionOptions) (*SamePartition[T], error) {
	primary := table
	if primary == nil {
		return nil, errs.Invalid("table", "is nil")
	}
	if !primary.Codec().HasETag() {
		return nil, errs.Invalid("table", "entity type has no ETag field: the index entities pattern needs optimistic concurrency on the entity")
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	if value == nil {
		return nil, errs.Invalid("value", "is nil")
	}
	var o SamePartitionOptions
	if opts != nil {
		o = *opts
	}
	pageBytes, err := pageBytesOf(o.PageBytes, "SamePartitionOptions.PageBytes")
	if err != nil {
		return nil, err
	}
	conc, err := concurrencyOf(o.Concurrency, "SamePartitionOptions.Concurrency")
	if err != nil {
		return nil, err
	}
	conflict := conflictPolicy(o.Conflict, primary.Logger())
	if err := conflict.Validate(); err != nil {
		return nil, err
	}
	pagesTbl, err := repo.OfType[codec.Entity](primary)
	if err != nil {
		return nil, err
	}
	lo, hi, err := keys.Escaped().Range(tagIndex, name)
	if err != nil {
		return nil, err
	}
	return &SamePartition[T]{
		primary: primary, codec: primary.Codec(),
		pages: pageStore{tbl: pagesTbl, prop: "IDs", capacity: pageBytes},
		name:  name, value: normalized(value, o.Normalize), norm: normOf(o.Normalize),
		conc: conc, conflict: conflict, lo: lo, hi: hi, queue: o.Queue,
	}, nil
}

func checkName(name string) error {
	if name == "" || utf8.RuneCountInString(name) > maxNameChars || !utf8.ValidString(name) {
		return errs.Invalid("Name", "must be 1 to %d characters of valid UTF-8, got %q", maxNameChars, name)
	}
	return nil
}

func pageBytesOf(n int, field string) (int, error) {
	switch {
	case n == 0:
		return DefaultPageBytes, nil
	case n < minPageBytes || n > codec.MaxStringBytes:
		return 0, errs.Invalid(field, "must be between %d and %d (codec.MaxStringBytes), got %d", minPageBytes, codec.MaxStringBytes, n)
	}
	return n, nil
}

func concurrencyOf(n int, field string) (int, error) {
	switch {
	case n == 0:
		return DefaultConcurrency, nil
	case n < 1:
		return 0, errs.Invalid(field, "must be at least 1, got %d", n)
	}
	return n, nil
}

// Table returns the repository of the indexed entities, for reads. Writes through it
// bypass the index.
func (ix *SamePartition[T]) Table() *repo.Table[T] { return ix.primary }

// KeyRange returns the RowKeys [lo, hi) that this index's entities occupy in every
// partition. A query that reads the entities of a partition can leave them out with two
// range queries, or skip rows in that range; the indexed entities' RowKeys may not fall
// in it (Insert refuses them).
func (ix *SamePartition[T]) KeyRange() (lo, hi string) { return ix.lo, ix.hi }

// location returns where the pages of value live in partition pk, refusing a value whose
// index RowKey would break the 1 KiB key limit.
func (ix *SamePartition[T]) location(pk, value string) (location, error) {
	if err := checkValue(value); err != nil {
		return location{}, err
	}
	longest := keys.Join(tagIndex, ix.name, value, pageNumber(maxPages))
	if n := utf16Bytes(longest); n > codec.MaxKeyBytes {
		return location{}, errs.TooLarge("value", fmt.Sprintf("index %q: the index entity's RowKey (escaped \"idx!%s!<value>!<page>\") would exceed the key limit (UTF-16 bytes)", ix.name, ix.name), n, codec.MaxKeyBytes)
	}
	lo, hi, _ := keys.Escaped().Range(tagIndex, ix.name, value)
	return location{pk: pk, lo: lo, hi: hi, rowKey: func(n int) string {
		return keys.Join(tagIndex, ix.name, value, pageNumber(n))
	}}, nil
}

// check refuses, before any request, an entity this index cannot store.
func (ix *SamePartition[T]) check(v *T) (pk, rk string, err error) {
	if v == nil {
		return "", "", errs.Invalid("entity", "is nil")
	}
	if _, err := ix.codec.Encode(v); err != nil {
		return "", "", err
	}
	pk, rk = ix.codec.Keys(v)
	if err := ix.checkKeys(pk, rk); err != nil {
		return "", "", err
	}
	if value := ix.value(v); value != "" {
		if _, err := ix.location(pk, value); err != nil {
			return "", "", err
		}
	}
	return pk, rk, nil
}

func (ix *SamePartition[T]) checkKeys(pk, rk string) error {
	if err := checkKey(Key{pk, rk}); err != nil {
		return err
	}
	if rk >= ix.lo && (ix.hi == "" || rk < ix.hi) {
		// Not rk itself: a key in that range holds an indexed value.
		return errs.Invalid("RowKey", "lies in the RowKeys of index %q's entities [%q, %q)", ix.name, ix.lo, ix.hi)
	}
	return ix.pages.fits(rk)
}
