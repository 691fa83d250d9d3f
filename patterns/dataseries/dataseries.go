package dataseries

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Get reads a series with one point query: every point in one request, the point of the
// pattern (against one request, or one entity each, per point).
//
// Errors: errs.ErrNotFound (no such series), errs.ErrInvalidInput (keys), *codec.DecodeError (a
// point holds something else than a number), errs.ErrTransient, *errs.ServiceError.
func (s *Store[V]) Get(ctx context.Context, pk, rk string) (Series[V], error) {
	if err := s.checkKeys(pk, rk); err != nil {
		return Series[V]{}, err
	}
	e, err := s.table.Get(ctx, pk, rk)
	if err != nil {
		return Series[V]{}, err
	}
	return s.decode(&e)
}

// Set stores v as point i of a series with one request: a merge of that one property,
// which creates the series if needed and leaves the other points (and any other
// property) as they are. It is unconditional and idempotent: the last Set of a point wins.
//
// Errors: errs.ErrInvalidInput (keys, index; nothing sent), errs.ErrTransient, *errs.ServiceError.
func (s *Store[V]) Set(ctx context.Context, pk, rk string, i int, v V) error {
	if err := s.checkKeys(pk, rk); err != nil {
		return err
	}
	if err := s.checkIndex(i); err != nil {
		return err
	}
	e := &codec.Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]any{s.names[i]: s.stored(v)}}
	return s.table.Upsert(ctx, e, &repo.UpsertOptions{Mode: repo.Merge})
}

// Put stores every point of series with one request (a merge of the point properties,
// leaving other properties as they are). When series.ETag is set, the write is
// conditional on it (errs.ErrPreconditionFailed if the series changed since it was read);
// otherwise it creates or overwrites the points. On success series.ETag holds the new
// ETag.
//
// Errors: errs.ErrInvalidInput (keys, a Points slice of the wrong length; nothing sent),
// errs.ErrPreconditionFailed, errs.ErrNotFound (conditional write of a deleted series),
// errs.ErrTransient, *errs.ServiceError.
func (s *Store[V]) Put(ctx context.Context, series *Series[V]) error {
	if series == nil {
		return errs.Invalid("series", "is nil")
	}
	if err := s.checkKeys(series.PartitionKey, series.RowKey); err != nil {
		return err
	}
	if len(series.Points) != len(s.names) {
		return errs.Invalid("Points", "has %d points, the layout %d", len(series.Points), len(s.names))
	}
	e := &codec.Entity{PartitionKey: series.PartitionKey, RowKey: series.RowKey, ETag: series.ETag, Properties: make(map[string]any, len(s.names))}
	for i, v := range series.Points {
		e.Properties[s.names[i]] = s.stored(v)
	}
	var err error
	if series.ETag != "" {
		err = s.table.Update(ctx, e, &repo.UpdateOptions{Mode: repo.Merge})
	} else {
		err = s.table.Upsert(ctx, e, &repo.UpsertOptions{Mode: repo.Merge})
	}
	if err == nil {
		series.ETag = e.ETag
	}
	return err
}

// Add adds delta to point i of a series and returns the point's new value. It reads the
// series, then writes the new value with a merge conditional on the ETag it read
// (If-Match); when another writer changed the series in between (412), or created it first
// (409), it reads again and retries with a jittered backoff (Options.Conflict). No update
// is lost, however many writers add at once; under heavy contention each Add costs more
// requests, which is the price the guide names for optimistic concurrency. A missing
// series is created.
//
// Every Add and Update carries an operation id (a random one when opts gives none), stored
// with the change in the same write: a write whose response was lost (errs.ErrOutcomeUnknown
// from repo, even when another writer's change followed it) is recognised on the re-read by
// its id (success, as long as the id is among the last Options.OpHistory operations of the
// series), and never applied twice: it is applied again only when the re-read shows the
// series still at the version it read, and otherwise the errs.ErrOutcomeUnknown error is
// returned (a series changed or re-created without the id may be another writer's doing
// after this write landed). Give your own OpID to settle that case, a retried call or a
// redelivered message: calling again with the same id counts it once.
//
// Errors: errs.ErrInvalidInput (keys, index, OpID; nothing sent), errs.ErrNotFound (no such table,
// or the series was deleted during the update), errs.ErrOutcomeUnknown (see above),
// errs.ErrTransient (also when the conflict retries are exhausted:
// errors.Is(err, errs.ErrPreconditionFailed) tells that case), *codec.DecodeError,
// *errs.ServiceError.
func (s *Store[V]) Add(ctx context.Context, pk, rk string, i int, delta V, opts *AddOptions) (V, error) {
	if err := s.checkIndex(i); err != nil {
		return 0, err
	}
	var opID string
	if opts != nil {
		opID = opts.OpID
	}
	out, err := s.update(ctx, pk, rk, opID, func(points []V) ([]int, error) {
		points[i] += delta
		return []int{i}, nil
	})
	if err != nil {
		return 0, err
	}
	return out.Points[i], nil
}

// Update runs a read-modify-write of a series under optimistic concurrency: fn receives a
// copy of the points (zeros for a new series), changes them, and the points that differ
// are written with one merge conditional on the ETag read, retried from the read on
// conflicts as in Add. fn may run several times and must only compute from its argument.
// An error from fn stops Update and is returned as it is. It returns the series as
// written.
//
// Errors: those of Add, and fn's.
func (s *Store[V]) Update(ctx context.Context, pk, rk string, fn func(points []V) error, opts *UpdateOptions) (Series[V], error) {
	if fn == nil {
		return Series[V]{}, errs.Invalid("fn", "is nil")
	}
	var opID string
	if opts != nil {
		opID = opts.OpID
	}
	return s.update(ctx, pk, rk, opID, func(points []V) ([]int, error) {
		before := slices.Clone(points)
		if err := fn(points); err != nil {
			return nil, err
		}
		if len(points) != len(before) {
			return nil, errs.Invalid("Points", "fn changed the number of points")
		}
		var changed []int
		for i := range points {
			if points[i] != before[i] {
				changed = append(changed, i)
			}
		}
		return changed, nil
	})
}

// fnError carries an error of the caller's fn through retry.Do, which does not retry it.
type fnError struct{ err error }

func (e *fnError) Error() string { return e.err.Error() }
func (e *fnError) Unwrap() error { return e.err }

// update is the read-modify-write loop of Add and Update.
func (s *Store[V]) update(ctx context.Context, pk, rk, opID string, change func(points []V) ([]int, error)) (Series[V], error) {
	if err := s.checkKeys(pk, rk); err != nil {
		return Series[V]{}, err
	}
	if err := checkOpID(opID); err != nil {
		return Series[V]{}, err
	}
	given := opID != ""
	if !given {
		// Without an id, a lost response followed by another writer's change would be
		// indistinguishable from a refusal, and the change applied twice.
		opID = autoOpID()
	}
	var out Series[V]
	var lost lostWrite
	op := retry.Op{Name: "series update", Resource: s.table.Name(), PartitionKey: pk, RowKey: rk,
		Retryable: func(err error) bool {
			return errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrAlreadyExists)
		}}
	err := retry.Optimistic(ctx, s.conflict, op, func(ctx context.Context, _ int) error {
		e, err := s.table.Get(ctx, pk, rk)
		exists := err == nil
		if errors.Is(err, repo.ErrNotFound) {
			e, err = codec.Entity{PartitionKey: pk, RowKey: rk}, nil
		}
		if err != nil {
			return err
		}
		cur, err := s.decode(&e)
		if err != nil {
			return err
		}
		ops, _ := e.Properties[OpsProperty].(string)
		if opID != "" && slices.Contains(strings.Fields(ops), opID) {
			out = cur // applied already: by an earlier attempt, a retried call or a duplicate
			return nil
		}
		next := slices.Clone(cur.Points)
		changed, err := change(next)
		if err != nil {
			return &fnError{err}
		}
		if len(changed) == 0 && !given {
			out = cur
			return nil
		}
		w := &codec.Entity{PartitionKey: pk, RowKey: rk, ETag: e.ETag, Properties: make(map[string]any, len(changed)+1)}
		for _, i := range changed {
			w.Properties[s.names[i]] = s.stored(next[i])
		}
		if opID != "" {
			w.Properties[OpsProperty] = s.recordOp(ops, opID)
		}
		if exists {
			err = s.table.Update(ctx, w, &repo.UpdateOptions{Mode: repo.Merge})
		} else {
			err = s.table.Insert(ctx, w)
		}
		if errors.Is(err, repo.ErrOutcomeUnknown) {
			out, err = s.settle(ctx, &lost, err, pk, rk, opID, entityETag(&e, exists))
			return err
		}
		if err != nil {
			return err
		}
		out = Series[V]{PartitionKey: pk, RowKey: rk, Points: next, ETag: w.ETag}
		return nil
	})
	var fe *fnError
	if errors.As(err, &fe) {
		return Series[V]{}, fe.err
	}
	return out, lost.keep(err, s.table.Name(), pk, rk)
}

// recordOp appends id to the space-separated ops, keeping the last s.history.
func (s *Store[V]) recordOp(ops, id string) string {
	f := append(strings.Fields(ops), id)
	if len(f) > s.history {
		f = f[len(f)-s.history:]
	}
	return strings.Join(f, " ")
}
