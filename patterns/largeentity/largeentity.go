package largeentity

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// This file is the guide's large entities pattern as code, in the guide's order:
//
//  1. upload the large content to a blob under a fresh name (upload);
//  2. write the entity that points to it, conditional on what the write read (insert,
//     replace);
//  3. delete the blobs the entity referenced before and no longer does (finish);
//
// and the sweeper that reclaims what a stopped write leaves behind (sweepPage, judge).
// Delete runs the steps the other way round: the entity first, its blobs after
// (delete.go).

// run is one Insert, Update or Upsert: check places the new content (inline, or under a
// fresh blob name), then insert or replace runs steps 1 and 2, and finish step 3.
func (w *write[T]) run(ctx context.Context) error {
	if err := w.check(); err != nil {
		return err
	}
	if w.kind == kindInsert {
		return w.insert(ctx)
	}
	pol := w.s.opts.Conflict
	if w.kind == kindUpdate {
		pol = retry.NoRetry()
	}
	// Upsert: a lost race (the entity changed between our read and our conditional write)
	// is retried from the read; the new blobs are kept and reused.
	var old []Blob
	op := retry.Op{Name: "upsert with blobs", Resource: w.s.table.Name(), PartitionKey: w.pk, RowKey: w.rk}
	err := retry.Optimistic(ctx, pol, op, func(ctx context.Context, _ int) error {
		var err error
		old, err = w.replace(ctx)
		return err
	})
	if errors.Is(err, errRace) {
		// The last attempt was refused and the loop gave up: decide what landed.
		if err := w.failed(ctx, unrace(err)); err != nil {
			return err
		}
		return w.finish(ctx, nil) // proven ours: the blobs it replaced are left to the sweeper
	}
	if err != nil {
		return err
	}
	return w.finish(ctx, old)
}

// upload is step 1: every new out-of-line part goes to a blob under the fresh name check
// gave it, at most Concurrency at once, once per write.
func (w *write[T]) upload(ctx context.Context) error {
	if w.uploaded {
		return nil
	}
	var todo []*Blob
	var props []string
	for i, p := range w.parts {
		if p.pending && p.name != "" {
			todo, props = append(todo, p), append(props, w.s.parts[i].property)
		}
	}
	if len(todo) > 0 {
		// The clean-up message goes first: whatever happens after, it is there.
		if err := w.s.enqueueSweep(ctx, w.pk, w.rk, todo[0].name, w.s.opts.SweepGrace+w.s.opts.MaxWriteTime); err != nil {
			return err
		}
		// The clock of MaxWriteTime starts before the first blob exists: the sweeper's grace
		// is measured from the blob's creation, which is later.
		w.deadline = time.Now().Add(w.s.opts.MaxWriteTime)
	}
	if err := w.s.putBlobs(ctx, w.pk, w.rk, todo, props); err != nil {
		return err
	}
	w.uploaded = true
	return nil
}

// entityCtx bounds the entity write by the write's deadline (see Options.MaxWriteTime).
func (w *write[T]) entityCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if w.deadline.IsZero() {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, w.deadline)
}

// insert is steps 1 and 2 of Insert; a new entity replaces no blob.
func (w *write[T]) insert(ctx context.Context) error {
	if err := w.upload(ctx); err != nil {
		return err
	}
	ectx, cancel := w.entityCtx(ctx)
	defer cancel()
	if err := w.s.table.Insert(ectx, w.v); err != nil {
		if err := w.failed(ctx, err); err != nil {
			return err
		}
	}
	return w.finish(ctx, nil)
}

// replace is one read-then-conditional-write of Update or Upsert (steps 1 and 2). It
// returns the parts the entity held before the write.
func (w *write[T]) replace(ctx context.Context) ([]Blob, error) {
	s := w.s
	cur, err := s.get(ctx, w.pk, w.rk)
	exists := err == nil
	if err != nil && !(errors.Is(err, repo.ErrNotFound) && w.kind == kindUpsert) {
		return nil, err
	}
	curETag := s.table.Codec().ETag(&cur)
	if w.kind == kindUpdate && w.savedETag != "" && curETag != w.savedETag {
		return nil, fmt.Errorf("largeentity: update %s (PartitionKey=%q, RowKey=%q): the entity changed since it was read: %w", s.table.Name(), w.pk, w.rk, repo.ErrPreconditionFailed)
	}
	var old []Blob
	if exists {
		for _, p := range s.partsOf(&cur, false) {
			if p == nil {
				p = &Blob{}
			}
			old = append(old, *p)
		}
	}
	// A part without new content keeps what the entity holds now: never a reference the
	// entity no longer owns (its blob may already be deleted).
	for i, p := range w.parts {
		if p.pending || !p.present {
			continue
		}
		*p = Blob{}
		if exists {
			*p = old[i]
		}
	}
	if _, err := s.table.Codec().Encode(w.v); err != nil {
		return nil, err
	}
	if err := w.upload(ctx); err != nil {
		return nil, err
	}
	ectx, cancel := w.entityCtx(ctx)
	defer cancel()
	if exists {
		s.table.Codec().SetETag(w.v, curETag)
		err = s.table.Update(ectx, w.v, nil)
	} else {
		s.table.Codec().SetETag(w.v, "")
		err = s.table.Insert(ectx, w.v)
	}
	if err == nil {
		return old, nil
	}
	lost := errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrAlreadyExists) || (errors.Is(err, repo.ErrNotFound) && exists)
	if lost && w.kind == kindUpsert && ctx.Err() == nil && (w.deadline.IsZero() || time.Now().Before(w.deadline)) {
		return nil, retry.Again(&raceError{err: err})
	}
	if err := w.failed(ctx, err); err != nil {
		return nil, err
	}
	return old, nil
}

// finish is step 3: it deletes the blobs the entity no longer references and marks the
// parts stored.
func (w *write[T]) finish(ctx context.Context, old []Blob) error {
	keep := map[string]bool{}
	for _, p := range w.parts {
		if p.present && p.name != "" {
			keep[p.name] = true
		}
	}
	var drop []string
	for _, b := range old {
		if b.present && b.name != "" && !keep[b.name] {
			drop = append(drop, b.name)
		}
	}
	if err := w.s.dropReplaced(ctx, drop); err != nil {
		return err
	}
	for _, p := range w.parts {
		if p.pending {
			p.pending, p.placed, p.loaded = false, false, true
		}
	}
	return nil
}

// sweepPage is the sweeper on one listing page: it judges the blobs old enough to judge.
//
// The race it must not lose: a write uploads blob B, then points its entity at B. If the
// sweeper read the entity between those two steps, it would see B unreferenced. So B is
// judged only when it is older than SweepGrace, measured from B's creation by the
// service's clock (the page's Date), and every entity read for the page happens after the
// page was listed: by then any write that created B has either written its entity or given
// up (a write sends its entity write within MaxWriteTime of its first upload, and
// SweepGrace is at least twice that).
func (s *Store[T]) sweepPage(ctx context.Context, page container.ListBlobsFlatResponse) (SweepReport, error) {
	rep := SweepReport{At: s.listedAt(page)}
	groups := map[entityKey][]candidate{}
	var order []entityKey
	for _, it := range listed(page) {
		rep.Scanned++
		created := it.Properties.CreationTime
		if created == nil {
			created = it.Properties.LastModified
		}
		if created == nil || rep.At.Sub(*created) < s.opts.SweepGrace {
			rep.young(created, s.opts.SweepGrace)
			continue
		}
		k, ok := s.owner(it)
		if !ok {
			rep.Foreign++
			continue
		}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], candidate{name: *it.Name, etag: etagOf(it)})
	}
	var mu sync.Mutex
	err := fanout.Do(ctx, len(order), s.opts.Concurrency, func(ctx context.Context, i int) error {
		r, err := s.judge(ctx, order[i], groups[order[i]])
		mu.Lock()
		rep.add(r)
		mu.Unlock()
		return err
	})
	return rep, err
}

// judge reads one entity and deletes its old blobs that it does not reference, each only
// if its ETag is still the listed one.
func (s *Store[T]) judge(ctx context.Context, k entityKey, cands []candidate) (SweepReport, error) {
	var rep SweepReport
	referenced := map[string]bool{}
	cur, err := s.table.Get(ctx, k.pk, k.rk)
	switch {
	case err == nil:
		for _, p := range s.partsOf(&cur, false) {
			if p != nil && p.present && p.name != "" {
				referenced[p.name] = true
			}
		}
	case errors.Is(err, repo.ErrNotFound):
	case errors.Is(err, repo.ErrInvalidInput):
		// Metadata naming keys the table cannot hold: not one of ours after all.
		rep.Foreign += len(cands)
		return rep, nil
	default:
		return rep, err
	}
	for _, c := range cands {
		if referenced[c.name] {
			rep.Referenced++
			continue
		}
		etag := c.etag
		err := s.deleteBlob(ctx, c.name, &etag)
		switch {
		case err == nil:
			rep.Deleted++
			s.log.Info("largeentity: orphan blob deleted", zap.String("container", s.cname), zap.String("blob", c.name))
		case errors.Is(err, repo.ErrPreconditionFailed):
			rep.Changed++
		default:
			return rep, err
		}
	}
	return rep, nil
}
