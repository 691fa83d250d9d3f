package wideentity

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Get reads a logical entity with one range query over its chunks and reassembles it. When
// the chunks come from different writes (a write committed between the reads of two
// chunks: a query that runs over pages, or a service that does not read a partition as a
// snapshot), it reads again, with the backoff of Options.TornRetry.
//
// Errors: errs.ErrNotFound (no chunk), errs.ErrInvalidInput (keys; nothing sent), an error wrapping
// ErrTorn and errs.ErrTransient (still torn after every retry), errs.ErrTransient, *errs.ServiceError.
func (s *Store) Get(ctx context.Context, pk, rk string) (*Entity, error) {
	if err := s.checkKeys(pk, rk); err != nil {
		return nil, err
	}
	op := retry.Op{Name: "wide get", Resource: s.table.Name(), PartitionKey: pk, RowKey: rk,
		Retryable: func(err error) bool { return errors.Is(err, ErrTorn) }}
	return retry.DoValue(ctx, s.torn, op, func(ctx context.Context, _ int) (*Entity, error) {
		return s.read(ctx, pk, rk)
	})
}

// read reads the chunks once and assembles them, or reports a torn read.
// read reads the chunks once, with one range query, and puts them together.
func (s *Store) read(ctx context.Context, pk, rk string) (*Entity, error) {
	chunks, err := s.table.Collect(ctx, repo.Query{Filter: filter.RowKeyPrefix(pk, keys.Join(rk, ""))})
	if err != nil {
		return nil, err
	}
	return s.assemble(pk, rk, chunks)
}

// Insert stores a new logical entity: every chunk inserted in one entity group
// transaction (one request), so that readers see all of it or nothing. On success e.Rev
// is set and e can be passed to Put for a conditional overwrite.
//
// Errors: errs.ErrInvalidInput (keys, names, values, a chunk over PropertiesPerChunk or 1 MiB,
// the transaction over 4 MiB; nothing sent), errs.ErrAlreadyExists (a chunk exists),
// errs.ErrTransient, *repo.ActionError, *errs.ServiceError.
func (s *Store) Insert(ctx context.Context, e *Entity) error {
	rev := newRev()
	chunks, err := s.layout(e, rev)
	if err != nil {
		return err
	}
	actions := make([]repo.Action, len(chunks))
	for i, c := range chunks {
		actions[i] = s.table.InsertAction(c)
	}
	return s.submit(ctx, e, rev, chunks, actions)
}

// submit runs the transaction and records the new revision and chunks in e.
func (s *Store) submit(ctx context.Context, e *Entity, rev string, chunks []*codec.Entity, actions []repo.Action) error {
	// One transaction: all chunks or none (see the package documentation for the one
	// store that takes some deletes apart).
	if _, err := repo.SubmitOrSplit(ctx, actions...); err != nil {
		return err
	}
	e.Rev = rev
	e.chunks = make([]chunkRef, 0, len(chunks))
	for _, c := range chunks {
		e.chunks = append(e.chunks, chunkRef{rk: c.RowKey, etag: c.ETag})
	}
	return nil
}

// write stores e over the chunks in stored (as read, or nil for none) in one transaction:
// replaces the chunks that exist, conditional on their ETags; inserts the new ones; deletes
// the chunks of another layout. errs.ErrPreconditionFailed or errs.ErrAlreadyExists mean another
// writer changed the entity since stored was read.
func (s *Store) write(ctx context.Context, e *Entity, stored []chunkRef) error {
	rev := newRev()
	chunks, err := s.layout(e, rev)
	if err != nil {
		return err
	}
	etags := make(map[string]string, len(stored))
	for _, c := range stored {
		etags[c.rk] = c.etag
	}
	actions := make([]repo.Action, 0, len(chunks)+len(stored))
	for _, c := range chunks {
		if etag, ok := etags[c.RowKey]; ok {
			c.ETag = etag
			actions = append(actions, s.table.UpdateAction(c, nil)) // replace, If-Match
			delete(etags, c.RowKey)
		} else {
			actions = append(actions, s.table.InsertAction(c))
		}
	}
	for _, c := range stored {
		if etag, ok := etags[c.rk]; ok {
			actions = append(actions, s.table.DeleteAction(e.PartitionKey, c.rk, &repo.DeleteOptions{ETag: etag}))
		}
	}
	if len(actions) > repo.MaxTransactionActions {
		return errs.TooLarge("transaction", "the new layout and the chunks of the old one to delete do not fit one transaction", len(actions), repo.MaxTransactionActions)
	}
	return s.submit(ctx, e, rev, chunks, actions)
}

// Put stores e, every chunk in one entity group transaction. If e was read by Get (or
// stored by Insert, Put or Update), the write is conditional on the chunks it came from:
// errs.ErrPreconditionFailed if any changed since (optimistic concurrency over the whole
// logical entity). Otherwise Put overwrites whatever is stored: it reads the stored chunks
// first (to replace them and delete those of another layout in the same transaction) and
// retries if another writer wins the race. Two requests (one for a conditional Put).
//
// A write whose response was lost is recognised by its write id (see Options.Table: write
// tracking is always on): success if it committed, a retry from the read if it did not,
// and errs.ErrOutcomeUnknown only when the history cannot tell (then re-read before deciding).
//
// Errors: errs.ErrInvalidInput (as Insert; nothing sent), errs.ErrPreconditionFailed, errs.ErrOutcomeUnknown, ErrTorn (the
// stored chunks stayed torn), errs.ErrTransient, *repo.ActionError, *errs.ServiceError.
func (s *Store) Put(ctx context.Context, e *Entity) error {
	if e == nil {
		return errs.Invalid("entity", "is nil")
	}
	if e.chunks != nil {
		err := s.write(ctx, e, e.chunks)
		if errors.Is(err, repo.ErrAlreadyExists) || errors.Is(err, repo.ErrNotFound) {
			// A chunk we did not read appeared, or one we read is gone: the entity changed.
			err = fmt.Errorf("%w (%w)", repo.ErrPreconditionFailed, err)
		}
		return err
	}
	if _, err := s.layout(e, ""); err != nil { // refuse bad input before the read
		return err
	}
	props := e.Properties
	return s.update(ctx, e.PartitionKey, e.RowKey, func(cur *Entity) error {
		cur.Properties = props
		return nil
	}, e)
}

// Update runs a read-modify-write of a logical entity: it reads it (a new, empty Entity if
// there is none), calls fn to change it, and writes every chunk in one transaction
// conditional on the chunks it read; when another writer got there first it starts again
// with the backoff of Options.Conflict. fn may run several times and must only compute
// from its argument; an error from fn stops Update and is returned as it is. It returns
// the entity as written.
//
// Errors: those of Put, and fn's.
func (s *Store) Update(ctx context.Context, pk, rk string, fn func(e *Entity) error) (*Entity, error) {
	if fn == nil {
		return nil, errs.Invalid("fn", "is nil")
	}
	out := &Entity{PartitionKey: pk, RowKey: rk}
	err := s.update(ctx, pk, rk, fn, out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) update(ctx context.Context, pk, rk string, fn func(e *Entity) error, out *Entity) error {
	if err := s.checkKeys(pk, rk); err != nil {
		return err
	}
	err := retry.Optimistic(ctx, s.conflict, s.conflictOp("wide update", pk, rk), func(ctx context.Context, _ int) error {
		cur, err := s.Get(ctx, pk, rk)
		if errors.Is(err, repo.ErrNotFound) {
			cur, err = &Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]any{}}, nil
		}
		if err != nil {
			return err
		}
		stored := cur.chunks
		cur.Properties = maps.Clone(cur.Properties)
		if err := fn(cur); err != nil {
			return &fnError{err}
		}
		cur.PartitionKey, cur.RowKey = pk, rk // fn may not move the entity
		if err := s.write(ctx, cur, stored); err != nil {
			return err
		}
		*out = *cur
		return nil
	})
	var fe *fnError
	if errors.As(err, &fe) {
		return fe.err
	}
	return err
}

// SetProperty sets one property of a logical entity with one request: a merge of that
// property into the chunk that holds it (Options.ChunkOf), as the guide does to update
// one day's count. The other chunks, the other properties and the revision are untouched,
// so concurrent SetProperty calls on different properties never conflict. Use Update when
// several properties must change together.
//
// A merge cannot see the chunk's size: a value that makes the chunk exceed 252 properties
// or 1 MiB is refused by the service (the emulator does not check). If the entity is stored
// with another number of chunks than Options.Chunks, the merge finds no chunk and
// SetProperty falls back to Update, which rewrites the entity in the current layout.
//
// Errors: errs.ErrNotFound (no such entity), errs.ErrInvalidInput (keys, a reserved or invalid name,
// a value codec refuses; nothing sent), errs.ErrTransient, *errs.ServiceError.
func (s *Store) SetProperty(ctx context.Context, pk, rk, name string, value any) error {
	if err := s.checkKeys(pk, rk); err != nil {
		return err
	}
	if err := s.checkName(name); err != nil {
		return err
	}
	i, err := s.chunkIndex(name, s.chunks)
	if err != nil {
		return err
	}
	c := &codec.Entity{PartitionKey: pk, RowKey: chunkKey(rk, s.chunks, i), Properties: map[string]any{name: value}}
	if _, err := codec.EncodeEntity(c); err != nil {
		return err
	}
	err = s.table.Update(ctx, c, &repo.UpdateOptions{Mode: repo.Merge, Unconditional: true})
	if !errors.Is(err, repo.ErrNotFound) {
		return err
	}
	// No chunk at that key: no entity, or one stored in another layout.
	if _, err := s.Get(ctx, pk, rk); err != nil {
		return err
	}
	_, err = s.Update(ctx, pk, rk, func(e *Entity) error {
		e.Properties[name] = value
		return nil
	})
	return err
}

// Delete removes a logical entity: it reads the keys of its chunks, then deletes them all
// in one transaction, so that readers see the whole entity or nothing. A missing entity is
// success, so Delete can be run again after a crash. Two requests. With opts.ETag set to
// the version a read returned (Entity.ETag) the delete is conditional on every chunk read:
// a write to any of them since, SetProperty's included, refuses it; nil opts deletes
// whatever is stored.
//
// Errors: errs.ErrInvalidInput (keys; nothing sent), errs.ErrPreconditionFailed (opts.ETag
// given and the entity written since), errs.ErrTransient, *repo.ActionError,
// *errs.ServiceError.
func (s *Store) Delete(ctx context.Context, pk, rk string, opts *repo.DeleteOptions) error {
	if err := s.checkKeys(pk, rk); err != nil {
		return err
	}
	return retry.Optimistic(ctx, s.conflict, s.conflictOp("wide delete", pk, rk), func(ctx context.Context, _ int) error {
		q := repo.Query{Filter: filter.RowKeyPrefix(pk, keys.Join(rk, "")), Select: []string{"PartitionKey", "RowKey", RevProperty}}
		found, err := s.table.Collect(ctx, q)
		if err != nil {
			return err
		}
		if err := s.checkVersion(pk, rk, found, opts); err != nil {
			return err
		}
		var actions []repo.Action
		for _, c := range found {
			if _, _, ok := parseChunkKey(rk, c.RowKey); ok {
				actions = append(actions, s.table.DeleteAction(pk, c.RowKey, &repo.DeleteOptions{ETag: c.ETag}))
			}
		}
		if len(actions) == 0 {
			return nil
		}
		// A chunk gone or changed meanwhile: ErrNotFound or ErrPreconditionFailed, read again.
		// Apart only where the store cannot delete the keys in a transaction (see write).
		_, err = repo.SubmitOrSplit(ctx, actions...)
		return err
	})
}
