package indexentity

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// DefaultConcurrency bounds the point queries a lookup runs at once.
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
