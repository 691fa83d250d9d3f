package largeentity

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Delete removes the entity and then its blobs. It reads the entity first to learn its
// blobs and deletes it conditionally on what it read; with opts.ETag set, the delete is
// also conditional on it. nil opts deletes whatever version is stored. A crash between the two steps leaves orphan blobs for the
// sweeper (and, with Options.Sweeps, for the sweep message enqueued before the delete),
// never an entity without its blobs.
//
// Cost: one read, one delete, one delete per blob (and one enqueue with Options.Sweeps).
//
// A delete whose outcome repo cannot prove (errs.ErrOutcomeUnknown: a lost response, then a
// retry that met a conflict) is decided from a fresh read (see deleteOutcome): the entity
// still at the version read starts the delete over; gone, the version's blobs are deleted
// and the errs.ErrOutcomeUnknown error is returned (another writer may have deleted it);
// another version (another writer may have re-created it after this call's delete landed)
// is left alone with its blobs, and the error is returned.
//
// Errors: errs.ErrNotFound, errs.ErrPreconditionFailed (opts.ETag given and changed),
// errs.ErrOutcomeUnknown (see above), errs.ErrInvalidInput (keys; nothing sent),
// ErrTampered (the entity holds a forged reference: nothing is deleted;
// Store.Table().Delete removes the entity alone), errs.ErrTransient, *errs.ServiceError.
func (s *Store[T]) Delete(ctx context.Context, pk, rk string, opts *repo.DeleteOptions) error {
	var etag string
	if opts != nil {
		etag = opts.ETag
	}
	var old []Blob
	// unknown is the errs.ErrOutcomeUnknown error of a delete whose re-read found the
	// version it read gone, by this call or another writer: the answer, once that
	// version's blobs are deleted (names are never reused, and no write keeps a part of
	// an entity that does not exist).
	var unknown error
	op := retry.Op{Name: "delete with blobs", Resource: s.table.Name(), PartitionKey: pk, RowKey: rk}
	err := retry.Optimistic(ctx, s.opts.Conflict, op, func(ctx context.Context, _ int) error {
		cur, err := s.get(ctx, pk, rk)
		if err != nil {
			return err
		}
		curETag := s.table.Codec().ETag(&cur)
		if etag != "" && etag != curETag {
			return fmt.Errorf("largeentity: delete %s (PartitionKey=%q, RowKey=%q): the entity changed: %w", s.table.Name(), pk, rk, repo.ErrPreconditionFailed)
		}
		if hasBlobs(s.partsOf(&cur, false)) {
			if err := s.enqueueSweep(ctx, pk, rk, "delete:"+curETag, time.Minute); err != nil {
				return err
			}
		}
		err = s.table.Delete(ctx, pk, rk, &repo.DeleteOptions{ETag: curETag})
		if errors.Is(err, repo.ErrOutcomeUnknown) {
			var gone bool
			if gone, err = s.deleteOutcome(ctx, err, pk, rk, curETag); !gone {
				return err
			}
			unknown, err = err, nil
		}
		if errors.Is(err, repo.ErrPreconditionFailed) && etag == "" {
			return retry.Again(&raceError{err: err})
		}
		if err != nil {
			return err
		}
		old = old[:0]
		for _, p := range s.partsOf(&cur, false) {
			if p != nil && p.present && p.name != "" {
				old = append(old, *p)
			}
		}
		return nil
	})
	if err != nil {
		return unrace(err)
	}
	var names []string
	for _, b := range old {
		names = append(names, b.name)
	}
	if err := s.dropReplaced(ctx, names); err != nil {
		return err
	}
	return unknown
}
