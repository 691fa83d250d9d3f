package largeentity

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Metadata names on every blob of a Store, so that the sweeper can find the entity that
// should reference it. Keys are base64url (they may hold characters a header cannot).
// Names are lowercase: the service keeps their case, Azurite lowercases them.
const (
	metaPartitionKey = "partitionkey"
	metaRowKey       = "rowkey"
	metaProperty     = "property"
)

// Steps of a write, for the crash hooks of the tests.
const (
	stepUploaded = "uploaded" // new blobs stored, entity not written
	stepWritten  = "written"  // entity written, old blobs not deleted
)

type writeKind int

const (
	kindInsert writeKind = iota
	kindUpdate
	kindUpsert
)

// write is one Insert, Update or Upsert in progress.
type write[T any] struct {
	s         *Store[T]
	kind      writeKind
	v         *T
	pk, rk    string
	parts     []*Blob // pointers into v
	saved     []Blob  // the parts as the caller passed them, restored on failure
	savedETag string
	uploaded  bool
	deadline  time.Time // the entity write must be sent before it (zero: no new blob)
}

// Insert adds v and stores its new content: first every out-of-line part in a new blob,
// then the entity. A part read from another entity (not new content) is copied only when
// its content is loaded. On success v's parts hold their stored references and v's ETag
// the new ETag.
//
// Cost: one upload per part larger than InlineLimit, then one insert.
//
// Errors: errs.ErrAlreadyExists (the new blobs are deleted again), errs.ErrInvalidInput before
// any request (a broken limit of the entity or of a part, a part that is a reference
// without loaded content), errs.ErrOutcomeUnknown (the insert may have been applied; its
// blobs are kept), errs.ErrTransient, *errs.ServiceError; context errors.
func (s *Store[T]) Insert(ctx context.Context, v *T) error {
	return s.do(ctx, kindInsert, v)
}

// Update replaces the existing entity with v. It is conditional on v's ETag when set
// (errs.ErrPreconditionFailed if the entity changed since it was read), and in any case on
// the ETag of the entity it reads first to learn which blobs it replaces. Parts with new
// content (NewBlob) are uploaded under fresh names; a zero part removes the content;
// any other part keeps the content the entity holds for that property. After the entity
// is written, the blobs it no longer references are deleted; a failure to delete them is
// logged and left to the sweeper, and does not fail the Update.
//
// Cost: one read, one upload per new out-of-line part, one conditional write, one delete
// per replaced blob.
//
// Errors: errs.ErrNotFound, errs.ErrPreconditionFailed, errs.ErrInvalidInput before any
// request, ErrTampered (the stored entity holds a forged reference; nothing is uploaded or
// deleted), errs.ErrOutcomeUnknown (the write may have been applied, or was and the entity
// changed since: read it again), errs.ErrTransient, *errs.ServiceError; context errors.
func (s *Store[T]) Update(ctx context.Context, v *T) error {
	return s.do(ctx, kindUpdate, v)
}

// Upsert inserts v or replaces the entity with it, whatever its ETag: last writer wins.
// Parts follow Update's rules (a part without new content keeps what the entity holds
// now). It reads the entity first and writes conditionally on what it read, retrying the
// two steps while other writers race it, so that it always knows exactly which blobs it
// replaced.
//
// Cost: as Update, plus one read and one write per lost race.
//
// Errors: errs.ErrInvalidInput before any request, ErrTampered (as Update),
// errs.ErrOutcomeUnknown (as Update), errs.ErrTransient (also when races persist),
// *errs.ServiceError; context errors.
func (s *Store[T]) Upsert(ctx context.Context, v *T) error {
	return s.do(ctx, kindUpsert, v)
}

func (s *Store[T]) do(ctx context.Context, kind writeKind, v *T) error {
	if v == nil {
		return errs.Invalid("entity", "is nil")
	}
	w := &write[T]{s: s, kind: kind, v: v, savedETag: s.table.Codec().ETag(v)}
	w.pk, w.rk = s.table.Codec().Keys(v)
	w.parts = s.partsOf(v, true)
	w.saved = make([]Blob, len(w.parts))
	for i, p := range w.parts {
		w.saved[i] = *p
	}
	err := w.run(ctx)
	if err != nil && !errors.Is(err, errCrash) {
		for i, p := range w.parts {
			*p = w.saved[i]
		}
		s.table.Codec().SetETag(v, w.savedETag)
	}
	return err
}

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
	if err != nil {
		if errors.Is(err, errRace) {
			// The last attempt was refused (and we then gave up waiting): nothing references
			// the new blobs.
			if err := w.failed(ctx, unrace(err)); err != nil {
				return err
			}
			w.finish(ctx, nil) // proven ours: the blobs it replaced are left to the sweeper
			return nil
		}
		return unrace(err)
	}
	if err := w.hook(stepWritten); err != nil {
		return err
	}
	w.finish(ctx, old)
	return nil
}

// errRace marks a conditional write that lost to another writer (returned marked with
// retry.Again, so that the loop starts over; the mark is gone once the loop ends, errRace
// stays).
var errRace = errors.New("largeentity: the entity changed during the write")

type raceError struct{ err error }

func (e *raceError) Error() string   { return e.err.Error() }
func (e *raceError) Unwrap() []error { return []error{errRace, e.err} }

// unrace returns the underlying error of a lost race returned as it is; wrapped in an
// *retry.ExhaustedError (races kept being lost: errs.ErrTransient) or in a context error, it is
// left inside.
func unrace(err error) error {
	if r, ok := err.(*raceError); ok {
		return r.err
	}
	return err
}

// check validates the parts and places the new content (inline or a fresh blob name), then
// encodes the entity once, so that every limit is checked before any request.
func (w *write[T]) check() error {
	o := w.s.opts
	for i, p := range w.parts {
		f := w.s.parts[i]
		if w.kind == kindInsert && p.present && !p.pending {
			if !p.loaded {
				return errs.Invalid(f.goName, "holds a stored reference without its content: an Insert can only copy loaded content (Store.Load it first)")
			}
			p.pending = true // copy the content into this entity's own blob
		}
		if !p.pending {
			continue
		}
		if p.size > o.MaxPartBytes {
			return errs.TooLarge(f.goName, "part larger than Options.MaxPartBytes", int(min(p.size, 1<<62)), int(o.MaxPartBytes))
		}
		if len(p.ctype) > maxContentType {
			return errs.TooLarge(f.goName, "content type too long", len(p.ctype), maxContentType)
		}
		for j := 0; j < len(p.ctype); j++ {
			if c := p.ctype[j]; c < 0x20 || c > 0x7e {
				return errs.Invalid(f.goName, "content type %q must be printable ASCII (it is sent as a header)", p.ctype)
			}
		}
		p.placed = true
		if o.InlineLimit >= 0 && p.size <= int64(o.InlineLimit) {
			p.name, p.owner = "", ""
		} else {
			p.name, p.owner = w.s.newName(w.pk, w.rk, f.property), w.s.partPrefix(w.pk, w.rk, f.property)
		}
	}
	_, err := w.s.table.Codec().Encode(w.v)
	return err
}

// upload stores every new out-of-line part, at most Concurrency at once, once per write.
func (w *write[T]) upload(ctx context.Context) error {
	if w.uploaded {
		return nil
	}
	var todo []int
	for i, p := range w.parts {
		if p.pending && p.name != "" {
			todo = append(todo, i)
		}
	}
	if len(todo) > 0 {
		// The clean-up message goes first: whatever happens after, it is there.
		first := w.parts[todo[0]].name
		if err := w.s.enqueueSweep(ctx, w.pk, w.rk, first, w.s.opts.SweepGrace+w.s.opts.MaxWriteTime); err != nil {
			return err
		}
		// The clock of MaxWriteTime starts before the first blob exists: the sweeper's grace
		// is measured from the blob's creation, which is later.
		w.deadline = time.Now().Add(w.s.opts.MaxWriteTime)
	}
	err := fanout.Do(ctx, len(todo), w.s.opts.Concurrency, func(ctx context.Context, k int) error {
		i := todo[k]
		return w.s.putBlob(ctx, w.parts[i], w.pk, w.rk, w.s.parts[i].property)
	})
	if err != nil {
		return err
	}
	w.uploaded = true
	return w.hook(stepUploaded)
}

// entityCtx bounds the entity write by the write's deadline (see Options.MaxWriteTime).
func (w *write[T]) entityCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if w.deadline.IsZero() {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, w.deadline)
}

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
	if err := w.hook(stepWritten); err != nil {
		return err
	}
	w.finish(ctx, nil)
	return nil
}

// replace is one read-then-conditional-write of Update or Upsert. It returns the parts
// the entity held before the write.
func (w *write[T]) replace(ctx context.Context) ([]Blob, error) {
	s := w.s
	cur, err := s.get(ctx, w.pk, w.rk)
	exists := err == nil
	switch {
	case errors.Is(err, repo.ErrNotFound) && w.kind == kindUpsert:
	case err != nil:
		return nil, err
	}
	curETag := s.table.Codec().ETag(&cur)
	if w.kind == kindUpdate && w.savedETag != "" && curETag != w.savedETag {
		return nil, fmt.Errorf("largeentity: update %s (PartitionKey=%q, RowKey=%q): the entity changed since it was read: %w", s.table.Name(), w.pk, w.rk, repo.ErrPreconditionFailed)
	}
	var old []Blob
	if exists {
		for _, p := range s.partsOf(&cur, false) {
			if p != nil {
				old = append(old, *p)
			} else {
				old = append(old, Blob{})
			}
		}
	}
	// A part without new content keeps what the entity holds now: never a reference the
	// entity no longer owns (its blob may already be deleted).
	for i, p := range w.parts {
		if p.pending || !p.present {
			continue
		}
		if exists {
			*p = old[i]
		} else {
			*p = Blob{}
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

// failed decides what an entity write that returned err did, cleans up, and returns the
// error for the caller, or nil when the write is proven to have landed as sent. The write
// never deletes a blob after an outcome it cannot prove.
//
// The new blob names are fresh and random: an entity referencing one proves that this
// write landed (another writer can only have kept the reference after reading it). So,
// when the write uploaded blobs and the answer is a refusal (409, 412, 404; possibly the
// echo of its own earlier attempt whose answer was lost) or errs.ErrOutcomeUnknown, the
// entity is read again:
//
//   - it references a new blob and holds exactly what was sent: the write landed and
//     nothing changed since; it succeeds with the stored ETag;
//   - it references a new blob but changed since: the write landed, another writer
//     followed; the blobs are kept and the error wraps errs.ErrOutcomeUnknown (read the
//     entity again and decide);
//   - it references none (or is gone): after a plain refusal the write never landed and
//     never will (no attempt of it may still be in flight, and every Store write is
//     conditional on what it read), so the new blobs are deleted; after
//     errs.ErrOutcomeUnknown an attempt may still land, so they are left to the sweeper.
//
// Other failures (a timeout, exhausted retries) leave the new blobs to the sweeper, which
// checks; bad input (nothing sent) deletes them at once.
func (w *write[T]) failed(ctx context.Context, err error) error {
	var names []string
	for _, p := range w.parts {
		if p.pending && p.name != "" && w.uploaded {
			names = append(names, p.name)
		}
	}
	if len(names) == 0 || errors.Is(err, repo.ErrInvalidInput) {
		w.s.deleteBlobs(ctx, names)
		return err
	}
	unknown := errors.Is(err, repo.ErrOutcomeUnknown)
	refused := errors.Is(err, repo.ErrAlreadyExists) || errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrNotFound)
	if !refused && !unknown {
		w.s.log.Warn("largeentity: entity write failed ambiguously; its new blobs are left to the sweeper",
			zap.String("table", w.s.table.Name()), zap.Error(err))
		return err
	}
	cur, gerr := w.s.table.Get(context.WithoutCancel(ctx), w.pk, w.rk)
	landed := false
	switch {
	case errors.Is(gerr, repo.ErrNotFound):
	case gerr != nil:
		w.s.log.Warn("largeentity: entity not read again after a refused write; its new blobs are left to the sweeper",
			zap.String("table", w.s.table.Name()), zap.Error(gerr))
		return err
	default:
		referenced := map[string]bool{}
		for _, p := range w.s.partsOf(&cur, false) {
			if p != nil && p.present && p.name != "" {
				referenced[p.name] = true
			}
		}
		for _, n := range names {
			landed = landed || referenced[n]
		}
	}
	switch {
	case landed && w.same(&cur):
		w.s.table.Codec().SetETag(w.v, w.s.table.Codec().ETag(&cur))
		return nil
	case landed:
		// Keep every new blob: the sweeper removes those the entity does not use.
		return fmt.Errorf("largeentity: %s (PartitionKey=%q, RowKey=%q): the entity references this write's new blob, so the write was applied, and the entity changed since (read it again): %w; %w",
			w.s.table.Name(), w.pk, w.rk, repo.ErrOutcomeUnknown, err)
	case unknown:
		w.s.log.Warn("largeentity: entity write outcome unknown; its new blobs are left to the sweeper",
			zap.String("table", w.s.table.Name()), zap.Error(err))
		return err
	}
	w.s.deleteBlobs(ctx, names)
	return err
}

// same reports whether the stored entity cur holds exactly what this write sent.
func (w *write[T]) same(cur *T) bool {
	sent, err1 := w.s.table.Codec().Encode(w.v)
	stored, err2 := w.s.table.Codec().Encode(cur)
	return err1 == nil && err2 == nil && bytes.Equal(sent, stored)
}

// finish marks the parts stored and deletes the blobs the entity no longer references.
func (w *write[T]) finish(ctx context.Context, old []Blob) {
	keep := map[string]bool{}
	for _, p := range w.parts {
		if p.pending {
			p.pending, p.placed, p.loaded = false, false, true
		}
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
	w.s.deleteBlobs(ctx, drop)
}

func (w *write[T]) hook(step string) error {
	if w.s.crash == nil {
		return nil
	}
	return w.s.crash(step)
}

// errCrash is returned by the test hook that simulates a process dying between two steps.
var errCrash = errors.New("largeentity: simulated crash")

// putBlob uploads the content of p under p.name with the metadata that ties it to its
// entity. The name is fresh, so a retry may simply store it again.
func (s *Store[T]) putBlob(ctx context.Context, p *Blob, pk, rk, property string) error {
	c := s.container.NewBlockBlobClient(p.name)
	meta := map[string]*string{
		metaPartitionKey: ptr(base64.RawURLEncoding.EncodeToString([]byte(pk))),
		metaRowKey:       ptr(base64.RawURLEncoding.EncodeToString([]byte(rk))),
		metaProperty:     ptr(base64.RawURLEncoding.EncodeToString([]byte(property))),
	}
	headers := &blob.HTTPHeaders{}
	if p.ctype != "" {
		headers.BlobContentType = ptr(p.ctype)
	}
	op := retry.Op{Name: "upload blob", Resource: s.cname + "/" + p.name, PartitionKey: pk, RowKey: rk}
	return retry.Do(ctx, s.opts.Retry, op, func(ctx context.Context, _ int) error {
		_, err := c.UploadBuffer(ctx, p.data, &blockblob.UploadBufferOptions{HTTPHeaders: headers, Metadata: meta, Concurrency: uint16(s.opts.Concurrency)})
		return errs.Wrap(err, op.Name, op.Resource, pk, rk)
	})
}

// deleteBlobs deletes blobs no entity references any more. It never fails the caller: a
// blob it cannot delete is an orphan, logged here and removed by the sweeper.
func (s *Store[T]) deleteBlobs(ctx context.Context, names []string) {
	ctx = context.WithoutCancel(ctx)
	var mu sync.Mutex
	_ = fanout.Do(ctx, len(names), s.opts.Concurrency, func(ctx context.Context, i int) error {
		if err := s.deleteBlob(ctx, names[i], nil); err != nil {
			mu.Lock()
			s.log.Warn("largeentity: blob not deleted; the sweeper will remove it",
				zap.String("container", s.cname), zap.String("blob", names[i]), zap.Error(err))
			mu.Unlock()
		}
		return nil
	})
}

// deleteBlob deletes one blob, only if its ETag is still etag when etag is set. A blob
// already gone is success.
func (s *Store[T]) deleteBlob(ctx context.Context, name string, etag *azcore.ETag) error {
	var opts *blob.DeleteOptions
	if etag != nil {
		opts = &blob.DeleteOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: etag}}}
	}
	op := retry.Op{Name: "delete blob", Resource: s.cname + "/" + name}
	return retry.Do(ctx, s.opts.Retry, op, func(ctx context.Context, _ int) error {
		_, err := s.container.NewBlobClient(name).Delete(ctx, opts)
		err = errs.Wrap(err, op.Name, op.Resource, "", "")
		if errors.Is(err, repo.ErrNotFound) {
			return nil
		}
		return err
	})
}

// Delete removes the entity and then its blobs. It reads the entity first to learn its
// blobs and deletes it conditionally on what it read; when etag is not "", the delete is
// also conditional on it. A crash between the two steps leaves orphan blobs for the
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
// Errors: errs.ErrNotFound, errs.ErrPreconditionFailed (etag given and changed),
// errs.ErrOutcomeUnknown (see above), errs.ErrInvalidInput (keys; nothing sent),
// ErrTampered (the entity holds a forged reference: nothing is deleted;
// Store.Table().Delete removes the entity alone), errs.ErrTransient, *errs.ServiceError.
func (s *Store[T]) Delete(ctx context.Context, pk, rk, etag string) error {
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
			if p != nil {
				old = append(old, *p)
			}
		}
		return nil
	})
	if err != nil {
		return unrace(err)
	}
	if s.crash != nil {
		if err := s.crash(stepWritten); err != nil {
			return err
		}
	}
	var names []string
	for _, b := range old {
		if b.present && b.name != "" {
			names = append(names, b.name)
		}
	}
	s.deleteBlobs(ctx, names)
	return unknown
}

func ptr[V any](v V) *V { return &v }

// hasBlobs reports whether any part lives in a blob.
func hasBlobs(parts []*Blob) bool {
	for _, p := range parts {
		if p != nil && p.present && p.name != "" {
			return true
		}
	}
	return false
}
