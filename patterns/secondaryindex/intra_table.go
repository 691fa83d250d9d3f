package secondaryindex

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Intra stores every entity of type T as several copies in its own partition, one per
// index, and keeps them consistent with entity group transactions (the Azure Table storage
// design guide's "Intra-partition secondary index pattern"). The primary index identifies the entity;
// its value (the employee id) cannot change. See the package documentation.
//
// T's PartitionKey field is the partition of every copy. T's RowKey field is owned by
// Intra: writes ignore it except to find the caller's ETag (see Update), and reads fill
// it with the RowKey of the copy that was read ("email_jonesj@contoso.com"), together with
// that copy's ETag. An Intra is safe for concurrent use.
type Intra[T any] struct {
	rows  *repo.Table[T]
	dyn   *repo.Table[codec.Entity]
	c     *codec.Codec[T]
	all   []*index[T] // all[0] is the primary
	named map[string]*index[T]
	retry retry.Policy
	queue *queueworker.Client // IntraOptions.Queue
	seams seams               // set by tests only
}

// IntraOptions configures an Intra. nil means the zero value, whose every field is its
// documented default.
type IntraOptions struct {
	// Conflict is the backoff of a write without an ETag that starts over because a
	// concurrent writer moved the entity between its read and its transaction. Zero fields
	// take retry.Conflict()'s values; its Logger defaults to the table's.
	Conflict retry.Policy
	// Queue carries the backfill jobs of StartBackfill and Register. Defaults to nil:
	// no jobs (BackfillPartition, Verify and Repair run from code all the same).
	Queue *queueworker.Client
}

// NewIntra returns the intra-partition indexes of T in table: primary identifies each
// entity (unique, never empty, every property) and each of secondary adds a copy. The
// copies live in table, next to the entities; the logger is the table's. It sends nothing.
//
// Errors: errs.ErrInvalidInput (nothing sent) for a nil table, bad options or a bad index (a
// name that is empty, too long, not letters and digits, or used twice; a nil Value; an
// unknown property; Properties or AllowDuplicates on the primary; Table set), or when an
// update could need more actions than one transaction holds (1 + 2 per secondary index,
// at most repo.MaxTransactionActions), or Properties on an index of a type with encrypted
// fields.
func NewIntra[T any](table *repo.Table[T], primary Index[T], secondary []Index[T], opts *IntraOptions) (*Intra[T], error) {
	if table == nil {
		return nil, errs.Invalid("table", "is nil")
	}
	var o IntraOptions
	if opts != nil {
		o = *opts
	}
	conflict := o.Conflict.Or(retry.Policy{Logger: table.Logger()}.Or(retry.Conflict()))
	if err := conflict.Validate(); err != nil {
		return nil, err
	}
	dyn, err := repo.OfType[codec.Entity](table)
	if err != nil {
		return nil, err
	}
	if primary.AllowDuplicates || primary.Properties != nil {
		return nil, errs.Invalid("primary index", "must be unique and carry every property")
	}
	if n := 1 + 2*len(secondary); n > repo.MaxTransactionActions {
		return nil, errs.TooLarge("secondary indexes", "an update may delete and insert one copy per index in one transaction", n, repo.MaxTransactionActions)
	}
	x := &Intra[T]{rows: table, dyn: dyn, c: table.Codec(), named: map[string]*index[T]{}, retry: conflict, queue: o.Queue}
	seen := map[string]bool{}
	for _, spec := range append([]Index[T]{primary}, secondary...) {
		if spec.Table != "" {
			return nil, errs.Invalid(fmt.Sprintf("index %q", spec.Name), "Table: intra-partition copies live in the primary's partition; use Inter for copies in another table")
		}
		ix, err := compile(x.c, spec, seen)
		if err != nil {
			return nil, err
		}
		x.all = append(x.all, ix)
		x.named[ix.Name] = ix
	}
	return x, nil
}

// Table returns the repository of the table that holds the entities and their copies,
// for reads. Writing through it bypasses the indexes.
func (x *Intra[T]) Table() *repo.Table[T] { return x.rows }

// DeleteTable deletes the table, with every entity and copy (see repo.Table.DeleteTable).
//
// Errors: as repo.Table.DeleteTable.
func (x *Intra[T]) DeleteTable(ctx context.Context) error { return x.rows.DeleteTable(ctx) }

// Name returns the table's name.
func (x *Intra[T]) Name() string { return x.rows.Name() }

// CreateIfNotExists creates the table (see repo.Table.CreateIfNotExists).
//
// Errors: as repo.Table.CreateIfNotExists.
func (x *Intra[T]) CreateIfNotExists(ctx context.Context) error { return x.rows.CreateIfNotExists(ctx) }

// primaryOf returns v's partition, primary value and primary copy's RowKey, checked.
func (x *Intra[T]) primaryOf(v *T) (pk, value, rk string, err error) {
	if v == nil {
		return "", "", "", errs.Invalid("entity", "is nil")
	}
	pk, _ = x.c.Keys(v)
	if pk == "" {
		return "", "", "", errs.Invalid("PartitionKey", "is empty: the copies of an entity need a partition")
	}
	if value, err = x.all[0].value(v); err != nil {
		return "", "", "", err
	}
	if value == "" {
		return "", "", "", errs.Invalid(fmt.Sprintf("index %q", x.all[0].Name), "the primary value is empty: it identifies the entity")
	}
	rk, err = x.all[0].intraKey(value, "")
	return pk, value, rk, err
}

// keysOf returns v's partition and the RowKey of each of its copies ("" where v has no
// entry), checking every value before anything is sent.
func (x *Intra[T]) keysOf(v *T) (pk string, ks []string, err error) {
	pk, primary, rk, err := x.primaryOf(v)
	if err != nil {
		return "", nil, err
	}
	ks = make([]string, len(x.all))
	ks[0] = rk
	for i := 1; i < len(x.all); i++ {
		ix := x.all[i]
		val, err := ix.value(v)
		if err != nil {
			return "", nil, err
		}
		if val == "" {
			continue
		}
		if ks[i], err = ix.intraKey(val, primary); err != nil {
			return "", nil, err
		}
	}
	return pk, ks, nil
}

func (x *Intra[T]) copyOf(v *T, pk string, i int, rk string) (*codec.Entity, error) {
	return project(x.c, v, pk, rk, x.all[i].props)
}

// refusePartial refuses an Update of a value read from a copy that carries some
// properties only (the copy whose RowKey is rk): writing it back would erase the others.
func (x *Intra[T]) refusePartial(rk string) error {
	if ix := x.partialIndexOf(rk); ix != nil {
		return errs.Invalid(fmt.Sprintf("index %q", ix.Name), "the value was read from a copy that carries only some properties; read the whole entity with Get before updating it")
	}
	return nil
}

// partialIndexOf returns the index whose copies carry some properties only and whose key
// prefix rk has, or nil.
func (x *Intra[T]) partialIndexOf(rk string) *index[T] {
	name, _, ok := strings.Cut(rk, sep)
	if !ok {
		return nil
	}
	if ix := x.named[name]; ix != nil && ix.props != nil {
		return ix
	}
	return nil
}

// readIndex is index for a read with opts: Intra's copies are written in the same
// transaction as their primary, so a copy with every property already is what Verify
// would return; a copy with some properties only cannot be verified (it need not carry
// the primary's value), and Verify on it is refused rather than ignored.
func (x *Intra[T]) readIndex(name string, opts *ReadOptions) (*index[T], error) {
	ix, err := x.index(name)
	if err != nil {
		return nil, err
	}
	if opts != nil && opts.Verify && ix.props != nil {
		return nil, errs.Invalid("ReadOptions.Verify", "index %q carries some properties only (Index.Properties): "+
			"an Intra copy cannot be checked against its primary; read without Verify, or Get the entity", name)
	}
	return ix, nil
}

func (x *Intra[T]) index(name string) (*index[T], error) {
	ix := x.named[name]
	if ix == nil {
		return nil, errs.Invalid("index", "%q is not an index of this table", name)
	}
	return ix, nil
}

// fail returns an iterator that yields err once.
func fail[T any](err error) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		yield(zero, err)
	}
}

// target is what a change works on: the entity's partition, the RowKey of each of its
// copies as the change leaves them (ks[0] the primary copy's), and the caller's ETag with
// the RowKey of the copy it was read from.
type target struct {
	pk                 string
	ks                 []string
	guardRK, guardETag string
}

// writeTarget is the target of an Update or Upsert of v, checked before anything is sent.
func (x *Intra[T]) writeTarget(v *T, o changeOp) (*target, error) {
	pk, ks, err := x.keysOf(v)
	if err != nil {
		return nil, err
	}
	t := &target{pk: pk, ks: ks}
	_, t.guardRK = x.c.Keys(v)
	if o == opUpdate {
		t.guardETag = x.c.ETag(v)
	}
	if t.guardETag != "" {
		if err := x.refusePartial(t.guardRK); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// deleteTarget is the target of a Delete by keys. A primary copy's key names the entity;
// any other copy's key is read (one point query) for the primary value it carries. The
// errors name the partition and the index, never the copy's key (it holds the value).
func (x *Intra[T]) deleteTarget(ctx context.Context, pk, rk string, opts *repo.DeleteOptions) (*target, error) {
	if pk == "" {
		return nil, errs.Invalid("PartitionKey", "is empty: the copies of an entity need a partition")
	}
	if err := codec.ValidateKey("PartitionKey", pk); err != nil {
		return nil, err
	}
	if err := codec.ValidateKey("RowKey", rk); err != nil {
		return nil, err
	}
	t := &target{pk: pk, ks: []string{rk}, guardRK: rk}
	if opts != nil {
		t.guardETag = opts.ETag
	}
	name, _, _ := strings.Cut(rk, sep)
	ix := x.named[name]
	switch {
	case ix == nil:
		return nil, errs.Invalid("RowKey", "is not the key of a copy of this table's indexes")
	case ix == x.all[0]:
		return t, nil
	}
	v, err := x.rows.Get(retry.WithSensitiveKeys(ctx), pk, rk)
	if errors.Is(err, repo.ErrNotFound) && t.guardETag != "" {
		// The copy the value was read through is gone: its entity changed or went since.
		return nil, errs.Precondition(opDelete.String(), x.Name(), pk, "", fmt.Sprintf("the copy of index %q that the value was read through is gone: the entity changed since it was read (read it again)", ix.Name))
	}
	if err != nil {
		return nil, &lookupError{index: ix.Name, pk: pk, err: err}
	}
	value, err := x.all[0].value(&v)
	if err != nil {
		return nil, err
	}
	if value == "" {
		return nil, errs.Invalid(fmt.Sprintf("index %q", ix.Name), "the copy does not carry the primary value: delete by the primary copy's key")
	}
	if t.ks[0], err = x.all[0].intraKey(value, ""); err != nil {
		return nil, err
	}
	return t, nil
}

// changeOp is the write a change runs.
type changeOp int

const (
	opUpdate changeOp = iota
	opUpsert
	opDelete
)

func (o changeOp) String() string {
	return [...]string{"index update", "index upsert", "index delete"}[o]
}
