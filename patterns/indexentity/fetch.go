package indexentity

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// DefaultConcurrency bounds the point queries a Find runs at once.
const DefaultConcurrency = 8

// conflictPolicy fills the zero fields of p from retry.Conflict(), with logger as the
// default of its Logger.
func conflictPolicy(p retry.Policy, logger *zap.Logger) retry.Policy {
	return p.Or(retry.Policy{Logger: logger}.Or(retry.Conflict()))
}

// isConflict reports whether err says that another writer got to an entity or blob first:
// its ETag moved (412), it was created meanwhile (409) or deleted meanwhile (404).
func isConflict(err error) bool {
	return errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrAlreadyExists) || errors.Is(err, repo.ErrNotFound)
}

// actionConflict reports whether err is a conflict on an action of a transaction at index
// from or later (the index entities; the primary's action comes first).
func actionConflict(err error, from int) bool {
	var ae *repo.ActionError
	return errors.As(err, &ae) && ae.Index >= from && isConflict(err)
}

// fetch reads the entities of ks with point queries, at most limit at once. Entities that no
// longer exist are left out (a lookup raced with a delete), and so are keys no entity can
// have: ks come from index entities and blobs, untrusted input that anyone with write
// access can forge, and one bad entry must not make the lookup of a value fail for every
// real entity listed with it. The result keeps the order of ks.
func fetch[T any](ctx context.Context, t *repo.Table[T], ks []Key, limit int) ([]T, error) {
	got := make([]*T, len(ks))
	err := fanout.Do(ctx, len(ks), limit, func(ctx context.Context, i int) error {
		if checkKey(ks[i]) != nil {
			return nil // names no entity: nothing to read
		}
		v, err := t.Get(ctx, ks[i].PartitionKey, ks[i].RowKey)
		if errors.Is(err, repo.ErrNotFound) {
			return nil
		}
		got[i] = &v
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(ks))
	for _, v := range got {
		if v != nil {
			out = append(out, *v)
		}
	}
	return out, nil
}

// findBatch is how many keys a Find reads ahead of its caller: a caller that stops
// early leaves the rest unread.
const findBatch = 100

// found yields, in the order of ks, the entities of ks that keep accepts, read findBatch
// keys at a time with at most limit point queries at once. An error is yielded once and
// ends the iteration.
func found[T any](ctx context.Context, t *repo.Table[T], ks []Key, limit int, keep func(*T) bool, yield func(T, error) bool) {
	for lo := 0; lo < len(ks); lo += findBatch {
		got, err := fetch(ctx, t, ks[lo:min(lo+findBatch, len(ks))], limit)
		if err != nil {
			var zero T
			yield(zero, err)
			return
		}
		for i := range got {
			if keep(&got[i]) && !yield(got[i], nil) {
				return
			}
		}
	}
}

// FindOptions configures one Find. nil means the zero value, whose every field is its
// documented default.
type FindOptions struct {
	// Concurrency bounds the point queries of this Find. Defaults to the index's
	// Concurrency option; negative values are refused (errs.ErrInvalidInput).
	Concurrency int
}

// concurrency returns the bound of a Find: o's, or def.
func (o *FindOptions) concurrency(def int) (int, error) {
	if o == nil || o.Concurrency == 0 {
		return def, nil
	}
	if o.Concurrency < 0 {
		return 0, errs.Invalid("FindOptions.Concurrency", "must be positive or 0 (the index's Concurrency), got %d", o.Concurrency)
	}
	return o.Concurrency, nil
}

// normOf returns f, or the identity for nil: the Normalize of an index's options.
func normOf(f func(string) string) func(string) string {
	if f == nil {
		return func(s string) string { return s }
	}
	return func(s string) string {
		if s == "" {
			return s
		}
		return f(s)
	}
}

// normalized returns value followed by the Normalize f (value itself for nil f).
func normalized[T any](value func(*T) string, f func(string) string) func(*T) string {
	if f == nil {
		return value
	}
	n := normOf(f)
	return func(v *T) string { return n(value(v)) }
}
