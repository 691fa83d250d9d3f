package secondaryindex

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"go.uber.org/zap"
)

// ReadOptions configures the reads (Find, Range, Prefix) of an Inter or an Intra. nil
// means the zero value: no verification.
//
// For an Intra, Verify is a promise already kept and costs nothing: every copy is written
// in the same entity group transaction as its primary, so a hit always has the value and
// holds every property (with the ETag of the copy read, which Update accepts). The one
// exception is an index with Properties, whose copies carry only some properties and
// need not carry the primary's value: Intra cannot check them against the primary, and
// Verify on such an index is refused with errs.ErrInvalidInput before anything is sent.
type ReadOptions struct {
	// Verify checks every hit against the primary (one point query per hit, at most
	// Options.Concurrency at once): a copy whose entity is gone or no longer has the value
	// is dropped (and a reconciliation of it enqueued), and the others are returned as
	// the primary holds them, with every property and the primary's ETag. Without Verify a
	// hit is the copy as the worker last wrote it: possibly stale, with only the index's
	// properties, and no ETag of the primary; a copy of an index with Properties carries
	// in its ETag field a mark (not an ETag) that Update refuses, since writing it back
	// would erase the properties the copy leaves out. (A T without an ETag field cannot
	// carry the mark.)
	Verify bool
}

// partialMark starts the ETag field of a hit read without Verify from an index whose copies
// carry only some properties; the index's name follows. No service ETag has this form.
const partialMark = "tablepatterns-partial-copy:"

// hit is one copy found by a read, and what verifying it gave.
type hit[T any] struct {
	v     T
	err   error
	value string
	rk    string
	stale bool
}

// Lookup returns the entity of partition pk whose value in index is value (normalized by
// the index's Normalize), as the primary table holds it: the first hit of Find with
// Verify (one range query over that value's copies, plus one point query per hit), so the
// entity returned has the value now, with every property and its ETag. Copies whose
// primary is gone or no longer has the value are skipped, whatever their body holds.
//
// Errors: errs.ErrNotFound; errs.ErrInvalidInput (an index with duplicates, as Intra.Lookup
// refuses it: use Find; nothing sent); and those of Find.
func (x *Inter[T]) Lookup(ctx context.Context, pk, index, value string) (T, error) {
	if ix := x.named[index]; ix != nil && ix.AllowDuplicates {
		var zero T
		return zero, errs.Invalid(fmt.Sprintf("index %q", index), "allows duplicates: use Find")
	}
	for v, err := range x.Find(ctx, pk, index, value, &ReadOptions{Verify: true}) {
		return v, err
	}
	var zero T
	// Not the value: it is the key of the copy looked for (lookupError).
	return zero, &lookupError{index: index, pk: pk, err: &errs.ServiceError{Op: "index lookup", Resource: x.primary.Name(), PartitionKey: pk, Kind: repo.ErrNotFound,
		Err: errors.New("no entity holds the value")}}
}

// Find returns the entities of partition pk whose value in index is value, with one
// range query in the index partition (the copies of one value; usually one). Several hits
// for a unique value mean that the worker has not caught up yet or that the primary data
// holds duplicates: ask for Verify to get only entities that still hold the value.
//
// Errors (yielded): errs.ErrInvalidInput (unknown index, empty value; nothing sent),
// errs.ErrTransient, *repo.Error.
func (x *Inter[T]) Find(ctx context.Context, pk, index, value string, opts *ReadOptions) iter.Seq2[T, error] {
	ix, part, err := x.target(pk, index)
	if err == nil {
		value = ix.norm(value)
	}
	if err == nil && value == "" {
		err = errs.Invalid(fmt.Sprintf("index %q", index), "the value is empty: entities without a value have no entry")
	}
	if err != nil {
		return fail[T](err)
	}
	lo, hi, _ := keys.Escaped().Range(value)
	return x.scan(ctx, ix, pk, filter.RowKeyRange(part, lo, hi), opts)
}

// Range returns the entities of partition pk whose value in index is in [from, to), in
// value order, with one range query per 1,000 copies. An empty from or to leaves that end
// open.
//
// Errors (yielded): errs.ErrInvalidInput (unknown index; nothing sent), errs.ErrTransient,
// *repo.Error.
func (x *Inter[T]) Range(ctx context.Context, pk, index, from, to string, opts *ReadOptions) iter.Seq2[T, error] {
	ix, part, err := x.target(pk, index)
	if err != nil {
		return fail[T](err)
	}
	lo, hi := lowestCopy, ""
	if from = ix.norm(from); from != "" {
		lo = keys.Join(from)
	}
	if to = ix.norm(to); to != "" {
		hi = keys.Join(to)
	}
	return x.scan(ctx, ix, pk, filter.RowKeyRange(part, lo, hi), opts)
}

// Prefix returns the entities of partition pk whose value in index starts with prefix,
// in value order (the guide's "email addresses starting with 'a'"). An empty prefix
// returns every entity with a value in the index.
//
// Errors (yielded): as Range.
func (x *Inter[T]) Prefix(ctx context.Context, pk, index, prefix string, opts *ReadOptions) iter.Seq2[T, error] {
	if prefix == "" {
		return x.Range(ctx, pk, index, "", "", opts)
	}
	ix, part, err := x.target(pk, index)
	if err != nil {
		return fail[T](err)
	}
	return x.scan(ctx, ix, pk, filter.RowKeyPrefix(part, keys.Join(ix.norm(prefix))), opts)
}

func (x *Inter[T]) target(pk, index string) (*interIndex[T], string, error) {
	ix := x.named[index]
	if ix == nil {
		return nil, "", errs.Invalid("index", "%q is not an index of this table", index)
	}
	if pk == "" {
		return nil, "", errs.Invalid("PartitionKey", "is empty: the index partitions are named after it")
	}
	part, err := ix.partition(pk)
	return ix, part, err
}

// scan reads the copies selected by f page by page and yields their entities, verified
// against the primary if asked.
func (x *Inter[T]) scan(ctx context.Context, ix *interIndex[T], pk string, f filter.Expr, opts *ReadOptions) iter.Seq2[T, error] {
	verify := opts != nil && opts.Verify
	return func(yield func(T, error) bool) {
		var zero T
		pager := ix.copies.Pages(repo.Query{Filter: f})
		for pager.More() {
			page, err := pager.Next(ctx)
			if err != nil {
				yield(zero, err)
				return
			}
			hits := make([]hit[T], 0, len(page.Items))
			for i := range page.Items {
				h, ok := x.decodeCopy(ix, &page.Items[i], pk)
				if ok {
					hits = append(hits, h)
				}
			}
			if verify {
				x.verify(ctx, ix, pk, hits)
			}
			for _, h := range hits {
				if h.stale {
					continue
				}
				if !yield(h.v, h.err) || h.err != nil {
					return
				}
			}
		}
	}
}

// decodeCopy turns a copy back into a T with the primary's keys. Rows that are not copies
// (none should be in a copy range) are skipped. A copy of an index with Properties gets
// partialMark and the index's name as its ETag, which Update refuses; other copies get
// none. A copy whose body does not decode keeps the error: verify replaces it by the
// primary, which needs only the copy's key.
func (x *Inter[T]) decodeCopy(ix *interIndex[T], e *codec.Entity, pk string) (hit[T], bool) {
	parts, err := keys.Split(e.RowKey)
	if err != nil || len(parts) != 2 {
		return hit[T]{}, false
	}
	h := hit[T]{value: parts[0], rk: parts[1]}
	e.PartitionKey, e.RowKey, e.ETag = pk, parts[1], ""
	body, err := codec.EncodeEntity(e)
	if err == nil {
		err = x.c.Decode(body, &h.v)
	}
	if ix.props != nil {
		x.c.SetETag(&h.v, partialMark+ix.Name)
	}
	h.err = err
	return h, true
}

// verify replaces each hit by its primary, or marks it stale, with at most
// Options.Concurrency point queries at once.
func (x *Inter[T]) verify(ctx context.Context, ix *interIndex[T], pk string, hits []hit[T]) {
	sem := make(chan struct{}, x.opts.Table.Concurrency)
	var wg sync.WaitGroup
	for i := range hits {
		h := &hits[i]
		// Only the copy's key is needed: a row whose body is forged or corrupt (h.err from
		// decodeCopy) is judged by its primary like any other. A key no primary can have
		// is no copy of any entity: dropped, with nothing to reconcile.
		if codec.ValidateKey("RowKey", h.rk) != nil {
			h.stale = true
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cur, err := x.primary.Get(ctx, pk, h.rk)
			switch {
			case errors.Is(err, repo.ErrNotFound):
				h.stale = true
			case err != nil:
				h.err = err
			case ix.valueOf(&cur) != h.value:
				h.stale = true
			default:
				h.v, h.err = cur, nil
			}
			if h.stale {
				// Read repair: the copy outlived its entity's state; have it reconciled.
				if err := x.Notify(ctx, pk, h.rk); err != nil {
					x.opts.Table.Logger.Warn("secondaryindex: could not enqueue the repair of a stale copy",
						zap.String("index", ix.Name), zap.String("partitionKey", pk), zap.String("rowKey", h.rk), zap.Error(err))
				}
			}
		}()
	}
	wg.Wait()
}
