package indexentity

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// TableStoreOptions configures a TableStore. nil means the zero value, whose every field
// is its documented default.
type TableStoreOptions struct {
	// PageBytes is the most UTF-16 bytes of keys one index entity holds before the list
	// spills into the next entity. Defaults to DefaultPageBytes; at least 64.
	PageBytes int
	// Conflict is the backoff of the read-modify-write loop when another writer changed an
	// index entity first. Zero fields take retry.Conflict()'s values; its Logger defaults
	// to the table's.
	Conflict retry.Policy
}

// TableStore is option 3 of the guide's index entities pattern: index entities in a
// partition of their own (or another table), one partition per indexed value, listing the
// PartitionKey and RowKey of every entity with that value across the whole table. A list
// that outgrows a page spills into more entities of the same partition (RowKeys "000000",
// "000001", ...), all read with one query. Every change is a conditional write of one page
// retried on conflicts. Use it as the Store of an Eventual index. It is safe for
// concurrent use.
type TableStore struct {
	pages    pageStore
	name     string
	conflict retry.Policy
}

// NewTableStore returns the store of the index named name (e.g. "LastName"; 1 to 64
// characters) in table: a value's index entities live in the partition
// "idx!<name>!<value>" (escaped as codec/keys.Join does), so several indexes can share a
// table, the primary's included. The logger is the table's. It sends nothing.
//
// Errors: errs.ErrInvalidInput for a nil table, a bad name or an option out of range.
func NewTableStore(table *repo.Table[codec.Entity], name string, opts *TableStoreOptions) (*TableStore, error) {
	if table == nil {
		return nil, errs.Invalid("table", "is nil")
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	var o TableStoreOptions
	if opts != nil {
		o = *opts
	}
	pageBytes, err := pageBytesOf(o.PageBytes, "TableStoreOptions.PageBytes")
	if err != nil {
		return nil, err
	}
	cp := conflictPolicy(o.Conflict, table.Logger())
	if err := cp.Validate(); err != nil {
		return nil, err
	}
	return &TableStore{pages: pageStore{tbl: table, prop: "Keys", capacity: pageBytes}, name: name, conflict: cp}, nil
}

// Table returns the repository of the index entities.
func (s *TableStore) Table() *repo.Table[codec.Entity] { return s.pages.tbl }

// PartitionKey returns the partition of value's index entities.
//
// Errors: errs.ErrInvalidInput for an empty value or one that makes a key over 1 KiB.
func (s *TableStore) PartitionKey(value string) (string, error) {
	l, err := s.location(value)
	return l.pk, err
}

// keyPrefix is the start of every PartitionKey of this store's index entities.
func (s *TableStore) keyPrefix() string {
	return strings.TrimSuffix(keys.Join(tagIndex, s.name, "x"), "x")
}

func (s *TableStore) location(value string) (location, error) {
	if err := checkValue(value); err != nil {
		return location{}, err
	}
	pk := keys.Join(tagIndex, s.name, value)
	if n := utf16Bytes(pk); n > codec.MaxKeyBytes {
		return location{}, errs.TooLarge("value", fmt.Sprintf("index %q: the index partition key (escaped \"idx!%s!<value>\") would exceed the key limit (UTF-16 bytes)", s.name, s.name), n, codec.MaxKeyBytes)
	}
	return location{pk: pk, rowKey: pageNumber}, nil
}

// Check implements Store: it refuses a value whose index key would be invalid.
func (s *TableStore) Check(value string) error {
	_, err := s.location(value)
	return err
}

// Keys implements Store: the keys listed for value, sorted, with one query.
//
// Errors: errs.ErrInvalidInput (nothing sent), errs.ErrNotFound when the table does not exist,
// errs.ErrTransient, *repo.Error.
func (s *TableStore) Keys(ctx context.Context, value string) ([]Key, error) {
	l, err := s.location(value)
	if err != nil {
		return nil, err
	}
	pages, err := s.pages.read(ctx, l)
	if err != nil {
		return nil, err
	}
	entries := entriesOf(pages)
	out := make([]Key, 0, len(entries))
	for _, e := range entries {
		if k, ok := keyOf(e); ok {
			out = append(out, k)
		}
	}
	return out, nil
}

// Add implements Store: it lists k under value unless it is listed already, writing one
// page conditional on its ETag (or inserting the first or a spill page), retried on
// conflicts. It is idempotent.
//
// Errors: errs.ErrInvalidInput (nothing sent), errs.ErrNotFound when the table does not exist,
// errs.ErrTransient (wrapping errs.ErrPreconditionFailed when contention outlasted the Conflict
// policy), *repo.Error. A failure past the checks names the operation and the index, never
// the value's partition (it holds the value), and gives the cause's status and code.
func (s *TableStore) Add(ctx context.Context, value string, k Key) error {
	_, err := s.apply(ctx, value, k, true)
	return err
}

// apply implements reporter: Add (add) or Remove, reporting whether a write was sent
// that changed, or may have changed, the list.
func (s *TableStore) apply(ctx context.Context, value string, k Key, add bool) (bool, error) {
	if !add {
		return s.change(ctx, "index remove", value, k, func(l location, pages []*page, entry string) ([]repo.Action, error) {
			return s.pages.planRemove(l, pages, entry), nil
		})
	}
	return s.change(ctx, "index add", value, k, func(l location, pages []*page, entry string) ([]repo.Action, error) {
		a, ok, err := s.pages.planAdd(l, pages, entry)
		if err != nil || !ok {
			return nil, err
		}
		return []repo.Action{a}, nil
	})
}

// Remove implements Store: it removes k from value's list, writing the pages that list it
// (a page left empty is deleted) in one transaction conditional on their ETags, retried on
// conflicts. It is idempotent.
//
// Errors: as Add.
func (s *TableStore) Remove(ctx context.Context, value string, k Key) error {
	_, err := s.apply(ctx, value, k, false)
	return err
}

func (s *TableStore) change(ctx context.Context, name, value string, k Key, plan func(location, []*page, string) ([]repo.Action, error)) (bool, error) {
	l, err := s.location(value)
	if err != nil {
		return false, err
	}
	if err := checkKey(k); err != nil {
		return false, err
	}
	entry := entryOf(k)
	if err := s.pages.fits(entry); err != nil {
		return false, err
	}
	wrote := false
	op := retry.Op{Name: name, Resource: s.pages.tbl.Name(), PartitionKey: l.pk, SensitiveKeys: true} // the partition holds the value
	err = retry.Optimistic(ctx, s.conflict, op, func(ctx context.Context, _ int) error {
		pages, err := s.pages.read(ctx, l)
		if err != nil {
			return err
		}
		actions, err := plan(l, pages, entry)
		if err != nil || len(actions) == 0 {
			return err
		}
		// An emptied page goes apart only on a store that cannot delete its key in a
		// transaction (Azurite, for U+2028 or U+2029; see the package documentation).
		_, err = repo.SubmitOrSplit(ctx, actions...)
		if err == nil || errors.Is(err, repo.ErrOutcomeUnknown) {
			wrote = true // this call changed the list, or may have
		}
		// errs.ErrOutcomeUnknown (a retried transaction that may have landed) is re-decided
		// like a conflict: Add and Remove have set semantics, so a fresh read of the pages
		// shows whether there is anything left to do.
		if errors.Is(err, repo.ErrOutcomeUnknown) || actionConflict(err, 0) {
			return retry.Again(err)
		}
		return err
	})
	if err != nil {
		err = &entryError{op: name, index: s.name, err: err}
	}
	return wrote, err
}
