package largeentity

import (
	"context"
	"errors"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
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
