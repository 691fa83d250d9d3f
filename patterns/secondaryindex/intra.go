package secondaryindex

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
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
	// afterSubmit, set by tests, replaces the outcome of each transaction (to play the
	// answers of a retried transaction whose first attempt landed).
	afterSubmit func(error) error
}

// submitted runs the transaction of p. Only on a store that cannot delete a key inside a
// transaction (Azurite, for U+2028 or U+2029) is such a delete sent apart, after it (see
// the package documentation, "Consistency").
func (x *Intra[T]) submitted(ctx context.Context, p *plan) ([]string, error) {
	etags, err := repo.SubmitOrSplit(ctx, p.acts...)
	if x.afterSubmit != nil {
		err = x.afterSubmit(err)
	}
	return etags, err
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

// stepKind says what an action of a write does to one copy.
type stepKind int

const (
	stepPrimary stepKind = iota // the primary copy
	stepPut                     // insert a copy under a new key
	stepKeep                    // rewrite a copy whose key did not change
	stepDrop                    // delete a copy whose key changed or whose entity goes
)

type step struct {
	ix    int
	kind  stepKind
	rk    string
	guard bool // conditional on the caller's ETag
}

// plan is one transaction of a write and what each of its actions is.
type plan struct {
	acts  []repo.Action
	steps []step
	del   bool // the plan deletes the entity
}

func (p *plan) add(a repo.Action, s step) {
	p.acts = append(p.acts, a)
	p.steps = append(p.steps, s)
}

// Insert stores v: its primary copy and one copy per secondary index where v has a
// value, all in one entity group transaction, so that either every copy is written or
// none. On success v's ETag field holds the primary copy's ETag.
//
// Errors: errs.ErrAlreadyExists (an entity with v's primary value exists),
// *UniqueViolationError (a unique index already holds one of v's values; nothing written),
// errs.ErrInvalidInput (a value that cannot be part of a key, a key or entity over a limit;
// nothing sent), errs.ErrTransient, *repo.Error.
func (x *Intra[T]) Insert(ctx context.Context, v *T) error {
	pk, ks, err := x.keysOf(v)
	if err != nil {
		return err
	}
	p, err := x.insertPlan(v, pk, ks)
	if err != nil {
		return err
	}
	etags, err := x.submitted(ctx, p)
	if err != nil {
		return x.explain(err, p, v, pk)
	}
	x.c.SetETag(v, etags[0])
	return nil
}

func (x *Intra[T]) insertPlan(v *T, pk string, ks []string) (*plan, error) {
	p := &plan{}
	for i, rk := range ks {
		if rk == "" {
			continue
		}
		e, err := x.copyOf(v, pk, i, rk)
		if err != nil {
			return nil, err
		}
		switch {
		case i == 0:
			p.add(x.dyn.InsertAction(e), step{kind: stepPrimary, rk: rk})
		case x.all[i].AllowDuplicates:
			// The key holds the primary value: no other entity can own it.
			p.add(x.dyn.UpsertAction(e, nil), step{ix: i, kind: stepKeep, rk: rk})
		default:
			p.add(x.dyn.InsertAction(e), step{ix: i, kind: stepPut, rk: rk})
		}
	}
	return p, nil
}

// Update replaces the entity with v's primary value by v, in one entity group transaction
// that rewrites every copy: a copy whose value changed (a new email) is deleted and the
// new one inserted, so no reader ever sees the old and the new value at once, or neither.
// Copies whose value is unchanged are replaced in place.
//
// The update is a read (the stored primary copy, for the old values) and a transaction
// conditional on what was read. When v carries an ETag (it was read by Get, Lookup, Find,
// Range or Prefix, or written by this Intra), the update is optimistic: it fails with
// errs.ErrPreconditionFailed if the entity changed since, whichever copy v was read from.
// Without an ETag it is last-writer-wins: a concurrent change makes it read again and
// retry with the jittered backoff. A value read from an index whose copies carry only some
// properties is refused (it would erase the others). On success v's ETag field holds the
// primary copy's new ETag.
//
// Errors: errs.ErrNotFound, errs.ErrPreconditionFailed, *UniqueViolationError (nothing
// written), errs.ErrInvalidInput (nothing sent), errs.ErrOutcomeUnknown (a transaction that
// may have landed: see the package documentation), errs.ErrTransient (also when concurrent
// writers kept winning until the retry policy gave up), *repo.Error.
func (x *Intra[T]) Update(ctx context.Context, v *T) error {
	return x.change(ctx, v, opUpdate)
}

// Upsert inserts v, or replaces the stored entity with its primary value
// unconditionally (last writer wins), writing every copy in one transaction as Insert and
// Update do. On success v's ETag field holds the primary copy's new ETag.
//
// Errors: *UniqueViolationError (nothing written), errs.ErrInvalidInput (nothing sent),
// errs.ErrOutcomeUnknown (a transaction that may have landed: see the package
// documentation), errs.ErrTransient, *repo.Error.
func (x *Intra[T]) Upsert(ctx context.Context, v *T) error {
	return x.change(ctx, v, opUpsert)
}

// Delete removes the entity with v's PartitionKey and primary value, and every copy of
// it, in one transaction. Only those two fields of v are needed; if v also carries an
// ETag (see Update), the delete is conditional on it.
//
// Errors: errs.ErrNotFound, errs.ErrPreconditionFailed, errs.ErrInvalidInput (nothing sent),
// errs.ErrOutcomeUnknown (a transaction that may have landed: see the package
// documentation), errs.ErrTransient, *repo.Error.
func (x *Intra[T]) Delete(ctx context.Context, v *T) error {
	return x.change(ctx, v, opDelete)
}

type changeOp int

const (
	opUpdate changeOp = iota
	opUpsert
	opDelete
)

func (o changeOp) String() string {
	return [...]string{"index update", "index upsert", "index delete"}[o]
}

// change runs Update, Upsert and Delete: read the primary copy, plan the transaction from
// the stored and the new keys, submit it, and start over when a concurrent writer won a
// race this call did not promise to detect.
func (x *Intra[T]) change(ctx context.Context, v *T, o changeOp) error {
	var pk, rk string
	var ks []string
	var err error
	if o == opDelete {
		pk, _, rk, err = x.primaryOf(v) // the other values are read from the stored entity
		ks = []string{rk}
	} else {
		pk, ks, err = x.keysOf(v)
	}
	if err != nil {
		return err
	}
	_, guardRK := x.c.Keys(v)
	guardETag := x.c.ETag(v)
	if o == opUpsert {
		guardETag = ""
	}
	if o == opUpdate && guardETag != "" {
		if ix := x.partialIndexOf(guardRK); ix != nil {
			return errs.Invalid(fmt.Sprintf("index %q", ix.Name), "the value was read from a copy that carries only some properties; read the whole entity with Get before updating it")
		}
	}
	missing := map[string]bool{}                                                                               // copies found already gone: not deleted again
	op := retry.Op{Name: o.String(), Resource: x.Name(), PartitionKey: pk, RowKey: ks[0], SensitiveKeys: true} // a round's error may name a copy
	return retry.Optimistic(ctx, x.retry, op, func(ctx context.Context, _ int) error {
		cur, err := x.rows.Get(ctx, pk, ks[0])
		if errors.Is(err, repo.ErrNotFound) && o == opUpsert {
			p, err := x.insertPlan(v, pk, ks)
			if err != nil {
				return err
			}
			err = x.submit(ctx, p, o, v, pk, missing)
			if errors.Is(err, repo.ErrOutcomeUnknown) {
				return repo.DecideOutcome(ctx, err, p.acts...)
			}
			return err
		}
		if err != nil {
			return err
		}
		_, old, err := x.keysOf(&cur)
		if err != nil {
			return fmt.Errorf("secondaryindex: the stored entity %s/%s has a value that cannot be indexed: %w", pk, ks[0], err)
		}
		gi, err := x.guard(&cur, o, pk, old, guardRK, guardETag)
		if err != nil {
			return err
		}
		p, err := x.changePlan(v, pk, ks, old, x.c.ETag(&cur), gi, guardETag, o, missing)
		if err != nil {
			return err
		}
		err = x.submit(ctx, p, o, v, pk, missing)
		if errors.Is(err, repo.ErrOutcomeUnknown) {
			return repo.DecideOutcome(ctx, err, p.acts...)
		}
		return err
	})
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

// guard finds which stored copy the caller's ETag belongs to: -1 when there is no ETag,
// 0 when it is the primary's, i for the copy of index i the caller read. An ETag that
// matches none of the current copies means the entity changed since it was read.
func (x *Intra[T]) guard(cur *T, o changeOp, pk string, old []string, guardRK, guardETag string) (int, error) {
	if guardETag == "" {
		return -1, nil
	}
	if guardETag == x.c.ETag(cur) {
		return 0, nil
	}
	for i := 1; i < len(old); i++ {
		if old[i] != "" && old[i] == guardRK {
			return i, nil
		}
	}
	return 0, x.stale(o, pk, old[0])
}

// stale is the error of a write whose caller's ETag no longer matches the entity of
// partition pk whose primary copy is rk: another writer changed (or deleted and wrote
// again) the entity since it was read. Whatever showed it (the service's 412 or 404 on
// the guarded action, which may be a copy's, or this call's own read), the caller gets
// one precondition failure naming the entity's primary copy, not the copy that was read.
func (x *Intra[T]) stale(o changeOp, pk, rk string) error {
	return errs.Precondition(o.String(), x.Name(), pk, rk, "the entity's ETag changed since it was read: another writer changed it (read it again and redo the change)")
}

func (x *Intra[T]) changePlan(v *T, pk string, ks, old []string, curETag string, gi int, guardETag string, o changeOp, missing map[string]bool) (*plan, error) {
	p := &plan{del: o == opDelete}
	// The primary copy goes first: its ETag is the one v gets.
	if o == opDelete {
		p.add(x.dyn.DeleteAction(pk, ks[0], &repo.DeleteOptions{ETag: curETag}), step{kind: stepPrimary, rk: ks[0], guard: gi == 0})
	} else {
		e, err := x.copyOf(v, pk, 0, ks[0])
		if err != nil {
			return nil, err
		}
		e.ETag = curETag
		p.add(x.dyn.UpdateAction(e, nil), step{kind: stepPrimary, rk: ks[0], guard: gi == 0})
	}
	for i := 1; i < len(x.all); i++ {
		o2, n := old[i], ""
		if o != opDelete {
			n = ks[i]
		}
		g := i == gi
		if n != "" && n == o2 {
			e, err := x.copyOf(v, pk, i, n)
			if err != nil {
				return nil, err
			}
			if g {
				e.ETag = guardETag
				p.add(x.dyn.UpdateAction(e, nil), step{ix: i, kind: stepKeep, rk: n, guard: true})
			} else {
				p.add(x.dyn.UpsertAction(e, nil), step{ix: i, kind: stepKeep, rk: n})
			}
			continue
		}
		if o2 != "" && !missing[o2] {
			var d repo.DeleteOptions
			if g {
				d.ETag = guardETag
			}
			p.add(x.dyn.DeleteAction(pk, o2, &d), step{ix: i, kind: stepDrop, rk: o2, guard: g})
		}
		if n != "" {
			e, err := x.copyOf(v, pk, i, n)
			if err != nil {
				return nil, err
			}
			if x.all[i].AllowDuplicates {
				// The key holds the primary value: no other entity can own it.
				p.add(x.dyn.UpsertAction(e, nil), step{ix: i, kind: stepKeep, rk: n})
			} else {
				p.add(x.dyn.InsertAction(e), step{ix: i, kind: stepPut, rk: n})
			}
		}
	}
	return p, nil
}

// submit sends a plan and turns a failed action into the error the caller should see, or
// into a retry when this call's own read was overtaken.
func (x *Intra[T]) submit(ctx context.Context, p *plan, o changeOp, v *T, pk string, missing map[string]bool) error {
	etags, err := x.submitted(ctx, p)
	if err == nil {
		if p.del {
			x.c.SetETag(v, "")
		} else {
			x.c.SetETag(v, etags[0])
		}
		return nil
	}
	var ae *repo.ActionError
	if errors.Is(err, repo.ErrOutcomeUnknown) || !errors.As(err, &ae) || ae.Index < 0 || ae.Index >= len(p.steps) {
		return err // an unknown outcome is decided by change, from a fresh read
	}
	s := p.steps[ae.Index]
	switch {
	case s.guard && (errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrNotFound)):
		return x.stale(o, pk, p.steps[0].rk) // the caller's ETag is stale
	case errors.Is(err, repo.ErrPreconditionFailed):
		return retry.Again(err) // our own read is stale
	case errors.Is(err, repo.ErrAlreadyExists):
		if s.kind == stepPut {
			return x.violation(err, s, v, pk)
		}
		return retry.Again(err) // the primary was inserted concurrently (Upsert)
	case errors.Is(err, repo.ErrNotFound):
		if s.kind == stepDrop {
			missing[s.rk] = true // already gone: plan without it
		}
		return retry.Again(err)
	}
	return err
}

// explain maps the failure of an Insert's transaction.
func (x *Intra[T]) explain(err error, p *plan, v *T, pk string) error {
	var ae *repo.ActionError
	if errors.Is(err, repo.ErrOutcomeUnknown) {
		return err // the copies may be this call's: never a *UniqueViolationError ("nothing written")
	}
	if errors.As(err, &ae) && ae.Index > 0 && ae.Index < len(p.steps) && errors.Is(err, repo.ErrAlreadyExists) {
		return x.violation(err, p.steps[ae.Index], v, pk)
	}
	return err
}

func (x *Intra[T]) violation(err error, s step, v *T, pk string) error {
	ix := x.all[s.ix]
	return &UniqueViolationError{Index: ix.Name, PartitionKey: pk, Value: ix.valueOf(v), Err: err}
}

// Get reads the entity of partition pk whose primary value is value, with one point query.
//
// Errors: errs.ErrNotFound, errs.ErrInvalidInput (nothing sent), errs.ErrTransient, *repo.Error.
func (x *Intra[T]) Get(ctx context.Context, pk, value string) (T, error) {
	return x.Lookup(ctx, pk, x.all[0].Name, value)
}

// Lookup reads the entity of partition pk whose value in the unique index named index is
// value (normalized by the index's Normalize), with one point query on its copy (the guide's
// "(PartitionKey eq 'Sales') and (RowKey eq 'email_jonesj@contoso.com')"). A copy of an
// index with Properties has the other fields zero.
//
// Errors: errs.ErrNotFound, errs.ErrInvalidInput (an unknown index, an index with duplicates —
// use Find —, a value no key can hold; nothing sent), errs.ErrTransient, *repo.Error. A
// failed read names the index and the partition, never the copy's key (it holds the value).
func (x *Intra[T]) Lookup(ctx context.Context, pk, index, value string) (T, error) {
	var zero T
	ix, err := x.index(index)
	if err != nil {
		return zero, err
	}
	if ix.AllowDuplicates {
		return zero, errs.Invalid(fmt.Sprintf("index %q", index), "allows duplicates: use Find")
	}
	return x.lookup(ctx, pk, ix, ix.norm(value))
}

// lookup reads the copy of a normalized value in a unique index.
func (x *Intra[T]) lookup(ctx context.Context, pk string, ix *index[T], value string) (T, error) {
	var zero T
	if value == "" {
		return zero, errs.Invalid(fmt.Sprintf("index %q", ix.Name), "the value is empty: entities without a value have no entry")
	}
	if err := keys.Validate(value); err != nil {
		return zero, ix.invalid(err)
	}
	rk, err := ix.intraKey(value, "")
	if err != nil {
		return zero, err
	}
	v, err := x.rows.Get(retry.WithSensitiveKeys(ctx), pk, rk)
	if err != nil {
		return zero, &lookupError{index: ix.Name, pk: pk, err: err}
	}
	return v, nil
}

// Find returns the entities of partition pk whose value in index is value: one point
// query for a unique index, one range query for an index with duplicates (in primary
// value order). opts is accepted as Inter's is; see ReadOptions for what it means here.
//
// Errors (yielded): as Lookup, except that no match yields nothing rather than
// errs.ErrNotFound; errs.ErrInvalidInput for ReadOptions.Verify on an index with
// Properties (nothing sent).
func (x *Intra[T]) Find(ctx context.Context, pk, index, value string, opts *ReadOptions) iter.Seq2[T, error] {
	ix, err := x.readIndex(index, opts)
	if err == nil {
		value = ix.norm(value)
	}
	if err == nil && value == "" {
		err = errs.Invalid(fmt.Sprintf("index %q", index), "the value is empty: entities without a value have no entry")
	}
	if err == nil {
		if verr := keys.Validate(value); verr != nil {
			err = ix.invalid(verr)
		}
	}
	if err != nil {
		return fail[T](err)
	}
	if !ix.AllowDuplicates {
		return func(yield func(T, error) bool) {
			v, err := x.lookup(ctx, pk, ix, value)
			if errors.Is(err, repo.ErrNotFound) {
				return
			}
			yield(v, err)
		}
	}
	lo, hi, _ := keys.Escaped().Range(value)
	prefix := ix.Name + sep
	return x.rows.Query(ctx, repo.Query{Filter: filter.RowKeyRange(pk, prefix+lo, prefix+hi)})
}

// Range returns the entities of partition pk whose value in index is in [from, to), in
// the index's order, with one range query (one request per 1,000 entities). An empty from
// or to leaves that end open. Pad numbers (keys.Pad) so that their order is numeric.
//
// opts is accepted as Inter's is; see ReadOptions for what it means here.
//
// Errors (yielded): errs.ErrInvalidInput (unknown index, ReadOptions.Verify on an index
// with Properties; nothing sent), errs.ErrTransient, *repo.Error.
func (x *Intra[T]) Range(ctx context.Context, pk, index, from, to string, opts *ReadOptions) iter.Seq2[T, error] {
	ix, err := x.readIndex(index, opts)
	if err != nil {
		return fail[T](err)
	}
	lo, hi := ix.intraBounds(ix.norm(from), ix.norm(to))
	return x.rows.Query(ctx, repo.Query{Filter: filter.RowKeyRange(pk, lo, hi)})
}

// Prefix returns the entities of partition pk whose value in index starts with prefix,
// in the index's order, with one range query (the guide's "email addresses starting with
// 'a'"). An empty prefix returns every entity that has a value in the index.
//
// opts is accepted as Inter's is; see ReadOptions for what it means here.
//
// Errors (yielded): as Range.
func (x *Intra[T]) Prefix(ctx context.Context, pk, index, prefix string, opts *ReadOptions) iter.Seq2[T, error] {
	ix, err := x.readIndex(index, opts)
	if err != nil {
		return fail[T](err)
	}
	p := ix.norm(prefix)
	if ix.AllowDuplicates {
		p = keys.Join(p) // the normalized prefix, escaped as the keys are
	}
	return x.rows.Query(ctx, repo.Query{Filter: filter.RowKeyPrefix(pk, ix.Name+sep+p)})
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

// Backfill writes every copy of items with bulk upserts (repo.BulkWrite): the way to load
// an empty partition or to rewrite the copies after an index was added. It is NOT atomic
// per entity and does not check unique indexes against what is stored (only among items,
// where a value held twice is refused before anything is sent); rerun it after a failure,
// since every write is an idempotent upsert. On success each item's ETag field holds its
// primary copy's ETag.
//
// Errors: errs.ErrInvalidInput (nothing sent), a *repo.BulkError with one slot per item (the
// first failure among its copies), ctx errors.
func (x *Intra[T]) Backfill(ctx context.Context, items []*T) error {
	var copies []*codec.Entity
	owner := []int{}
	seen := map[[2]string]int{}
	primaries := make([]*codec.Entity, len(items))
	for n, v := range items {
		pk, ks, err := x.keysOf(v)
		if err != nil {
			return fmt.Errorf("item %d: %w", n, err)
		}
		for i, rk := range ks {
			if rk == "" {
				continue
			}
			if m, dup := seen[[2]string{pk, rk}]; dup {
				if i == 0 {
					return errs.Invalid(fmt.Sprintf("index %q", x.all[0].Name), "items %d and %d have the same primary value", m, n)
				}
				return errs.Invalid(fmt.Sprintf("index %q", x.all[i].Name), "items %d and %d hold the value %q of a unique index", m, n, x.all[i].valueOf(v))
			}
			seen[[2]string{pk, rk}] = n
			e, err := x.copyOf(v, pk, i, rk)
			if err != nil {
				return fmt.Errorf("item %d: %w", n, err)
			}
			if i == 0 {
				primaries[n] = e
			}
			copies = append(copies, e)
			owner = append(owner, n)
		}
	}
	err := x.dyn.BulkWrite(ctx, copies, nil)
	var be *repo.BulkError
	if err != nil && !errors.As(err, &be) {
		return err
	}
	var out *repo.BulkError
	if be != nil {
		out = &repo.BulkError{Errors: make([]error, len(items))}
		for i, e := range be.Errors {
			if n := owner[i]; e != nil && out.Errors[n] == nil {
				// The transaction's error may name a copy's key, which holds the value.
				out.Errors[n] = &copyError{op: "backfill", pk: primaries[n].PartitionKey, rk: primaries[n].RowKey, err: e}
				out.Failed++
			}
		}
	}
	for n, v := range items {
		if out == nil || out.Errors[n] == nil {
			x.c.SetETag(v, primaries[n].ETag)
		}
	}
	if out != nil {
		return out
	}
	return nil
}

// fail returns an iterator that yields err once.
func fail[T any](err error) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		yield(zero, err)
	}
}
