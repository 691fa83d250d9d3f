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
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Get reads the entity with keys pk and rk, with one point query on its primary copy: rk
// is the primary copy's RowKey, the primary index's name, "_" and the primary value (the
// guide's "(PartitionKey eq 'Sales') and (RowKey eq 'empid_000223')"). Lookup reads by a
// value; Lookup(ctx, pk, primary.Name, "000223") is the same read.
//
// Errors: errs.ErrNotFound, errs.ErrInvalidInput (a key that is not a primary copy's;
// nothing sent), errs.ErrTransient, *repo.Error. A failed read names the primary index and
// the partition, never the key (it holds the primary value).
func (x *Intra[T]) Get(ctx context.Context, pk, rk string) (T, error) {
	var zero T
	primary := x.all[0]
	if pk == "" {
		return zero, errs.Invalid("PartitionKey", "is empty: the copies of an entity need a partition")
	}
	if err := codec.ValidateKey("PartitionKey", pk); err != nil {
		return zero, err
	}
	if err := codec.ValidateKey("RowKey", rk); err != nil {
		return zero, err
	}
	if !strings.HasPrefix(rk, primary.Name+sep) {
		return zero, errs.Invalid("RowKey", "is not the key of a primary copy (%s%s followed by the primary value): read by an indexed value with Lookup or Find", primary.Name, sep)
	}
	v, err := x.rows.Get(retry.WithSensitiveKeys(ctx), pk, rk)
	if err != nil {
		return zero, &lookupError{index: primary.Name, pk: pk, err: err}
	}
	return v, nil
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
