package migrate

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

type op uint8

const (
	opInsert op = iota
	opUpsert
	opUpdate
	opDelete
)

// Insert adds v (old keys, old shape) in every layout the stage writes. On success v's
// ETag field holds the ETag a later Update or Delete is conditional on.
//
// Errors: errs.ErrAlreadyExists, ErrOutcomeUnknown, ErrInvalidInput (nothing sent),
// ErrTransient, *repo.Error. An error after the old layout was written may leave the
// write applied there: read again, as for any write whose answer was lost.
func (m *Migration[O, N]) Insert(ctx context.Context, v *O) error {
	return m.writeValue(ctx, opInsert, v)
}

// Upsert inserts or replaces v in every layout the stage writes. Errors: as Insert, but
// never errs.ErrAlreadyExists.
func (m *Migration[O, N]) Upsert(ctx context.Context, v *O) error {
	return m.writeValue(ctx, opUpsert, v)
}

// Update replaces v, If-Match v's ETag when set (the ETag Get or a write returned).
// Errors: as Insert, plus errs.ErrPreconditionFailed and errs.ErrNotFound.
func (m *Migration[O, N]) Update(ctx context.Context, v *O) error {
	return m.writeValue(ctx, opUpdate, v)
}

// Delete removes the entity with the old keys (pk, rk) from every layout the stage
// writes; opts.ETag (the ETag Get returned) makes it conditional, nil deletes whatever
// is stored. Errors: as Update.
func (m *Migration[O, N]) Delete(ctx context.Context, pk, rk string, opts *repo.DeleteOptions) error {
	if err := checkKeys(pk, rk); err != nil {
		return err
	}
	var etag string
	if opts != nil {
		etag = opts.ETag
	}
	return m.write(ctx, opDelete, nil, pk, rk, etag)
}

func (m *Migration[O, N]) writeValue(ctx context.Context, o op, v *O) error {
	if v == nil {
		return errs.Invalid("value", "nil")
	}
	pk, rk := m.spec.Source.Codec().Keys(v)
	if err := checkKeys(pk, rk); err != nil {
		return err
	}
	if _, _, err := m.newKeys(pk, rk); err != nil {
		return err
	}
	return m.write(ctx, o, v, pk, rk, m.spec.Source.Codec().ETag(v))
}

func checkKeys(pk, rk string) error {
	if pk == "" || len(pk) > 1024 || len(rk) > 1024 {
		return errs.Invalid("keys", "PartitionKey must be 1 to 1024 bytes and RowKey at most 1024")
	}
	return nil
}

// writeOld is the application's write on the old layout, as the application asked,
// never sent without a condition (abandoned_write.go): writeOldGuarded. In a same-table
// migration a copy may sit at old keys written after Plan: the write never replaces nor
// deletes it, and is refused (ErrInvalidInput).
func (m *Migration[O, N]) writeOld(ctx context.Context, o op, v *O, pk, rk, etag string) error {
	t := m.spec.Source
	if unconditional(o, etag) {
		return m.writeOldGuarded(ctx, o, v, pk, rk)
	}
	switch o {
	case opInsert:
		err := t.Insert(ctx, v)
		if m.sameTable && errors.Is(err, repo.ErrAlreadyExists) {
			if _, rerr := m.readSource(ctx, pk, rk); errors.Is(rerr, errs.ErrInvalidInput) {
				return rerr
			}
		}
		return err
	case opUpsert:
		return t.Upsert(ctx, v, nil)
	case opUpdate:
		return t.Update(ctx, v, nil)
	}
	return t.Delete(ctx, pk, rk, &repo.DeleteOptions{ETag: etag})
}

// writeOldGuarded is a write the application made unconditional (Upsert, or Update and
// Delete without an ETag): it reads the row first, refuses a copy there, and writes
// If-Match the row read (or inserts where there was none), so neither a copy written at
// those keys meanwhile (same table) nor a newer version (its request abandoned and
// applied late) is ever replaced; a conflict reads again.
func (m *Migration[O, N]) writeOldGuarded(ctx context.Context, o op, v *O, pk, rk string) error {
	t, c := m.spec.Source, m.spec.Source.Codec()
	var landed error // a round's write that may have been applied (gone)
	for round := 1; ; round++ {
		s, err := m.readSource(ctx, pk, rk)
		switch {
		case err != nil:
		case !s.found && o != opUpsert:
			err = gone(landed, s, pk, rk)
		case !s.found:
			err = t.Insert(ctx, v)
		case o == opDelete:
			err = t.Delete(ctx, pk, rk, &repo.DeleteOptions{ETag: s.etag})
		default:
			c.SetETag(v, s.etag)
			err = t.Update(ctx, v, nil)
		}
		if err == nil || !conflict(err) || !s.found && o != opUpsert {
			if err != nil && v != nil {
				c.SetETag(v, "")
			}
			return err
		}
		if errors.Is(err, repo.ErrOutcomeUnknown) {
			landed = err
		}
		if err := giveUp(ctx, round, "write", pk, rk); err != nil {
			return err
		}
	}
}

// writeNew is a write once clean-up began: the entity is first finished (copy current,
// detached, old entity gone), then the copy alone is written, detached. An ETag the
// application holds may be the copy's or the old version the copy was made of.
func (m *Migration[O, N]) writeNew(ctx context.Context, stage Stage, o op, v *O, pk, rk, etag string) error {
	if stage == CleanUp {
		if err := m.finish(ctx, pk, rk); err != nil {
			return err
		}
	}
	for round := 1; ; round++ {
		err := m.writeCopyAlone(ctx, o, v, pk, rk, etag)
		// The copy is written If-Match the version read; a write the application made
		// unconditional reads again when another write moved first.
		if !readsAgain(o, etag, err) {
			return err
		}
		if err := giveUp(ctx, round, "write", pk, rk); err != nil {
			return err
		}
	}
}

// writeCopyAlone is one attempt of writeNew once the entity is finished.
func (m *Migration[O, N]) writeCopyAlone(ctx context.Context, o op, v *O, pk, rk, etag string) error {
	c, err := m.readCopy(ctx, pk, rk)
	switch {
	case err != nil:
		return err
	case (o == opUpdate || o == opDelete) && !c.found:
		return present(c, nil, pk, rk)
	case (o == opUpdate || o == opDelete) && etag != "" && etag != c.etag &&
		(etag != c.srcETag || c.srcETag == detachedETag):
		return errs.Precondition("update", m.tgt.Name(), pk, rk, "the ETag is not the entity's")
	}
	if m.seams.newWrite != nil {
		m.seams.newWrite(pk, rk)
	}
	if o == opDelete {
		return m.tgt.Delete(ctx, c.e.PartitionKey, c.e.RowKey, &repo.DeleteOptions{ETag: c.etag})
	}
	// The copy written now is a version the old entity never held: it records no old
	// version, so an ETag read of the old layout before it matches it no more (a write
	// If-Match that ETag would overwrite this one). finish deleted the old entity (here
	// or in the process that wrote the copy first), so no delete needs the old version.
	e, err := m.newCopy(*v, pk, rk, detachedETag, true)
	if err != nil {
		return err
	}
	switch {
	case o == opInsert:
		err = m.tgt.Insert(ctx, e)
	case o == opUpdate:
		e.ETag = c.etag
		err = m.tgt.Update(ctx, e, nil)
	default:
		err = m.upsertCopy(ctx, e, c)
	}
	if err == nil {
		m.spec.Source.Codec().SetETag(v, e.ETag)
	}
	return err
}

// detachedETag is what a copy written after clean-up began records as its source
// version: it was made of no version of the old entity.
const detachedETag = `W/"detached"`

// writeCopy writes the copy of the old entity s: an insert where there was none, a
// replace If-Match the copy read otherwise.
func (m *Migration[O, N]) writeCopy(ctx context.Context, s, c version, pk, rk string) error {
	e, err := m.copyOf(s, pk, rk)
	if err != nil {
		return err
	}
	m.seams.beforeCopyWrite(ctx, pk, rk)
	if !c.found {
		return m.tgt.Insert(ctx, e)
	}
	e.ETag = c.etag
	return m.tgt.Update(ctx, e, nil)
}

// dropStale deletes a copy whose old entity is gone, If-Match the copy read.
func (m *Migration[O, N]) dropStale(ctx context.Context, c version) error {
	m.seams.beforeCopyWrite(ctx, c.e.Properties[PropSourcePK].(string), c.e.Properties[PropSourceRK].(string))
	return m.tgt.Delete(ctx, c.e.PartitionKey, c.e.RowKey, &repo.DeleteOptions{ETag: c.etag})
}

// detach marks a current copy as standing alone (a merge of one property If-Match).
func (m *Migration[O, N]) detach(ctx context.Context, c version) error {
	e := &codec.Entity{PartitionKey: c.e.PartitionKey, RowKey: c.e.RowKey, ETag: c.etag,
		Properties: map[string]any{PropDetached: true}}
	return m.tgt.Update(ctx, e, &repo.UpdateOptions{Mode: repo.Merge})
}

// deleteOld deletes the old entity If-Match the version its detached copy holds; gone
// already is done.
func (m *Migration[O, N]) deleteOld(ctx context.Context, pk, rk, etag string) error {
	err := m.src.Delete(ctx, pk, rk, &repo.DeleteOptions{ETag: etag})
	if errors.Is(err, repo.ErrNotFound) {
		return nil
	}
	return err
}

// dropCopy removes the copy of (pk, rk), whatever version it holds: abort's rule.
func (m *Migration[O, N]) dropCopy(ctx context.Context, pk, rk string) error {
	for round := 1; ; round++ {
		c, err := m.readCopy(ctx, pk, rk)
		if err != nil || !c.found {
			return err
		}
		err = m.tgt.Delete(ctx, c.e.PartitionKey, c.e.RowKey, &repo.DeleteOptions{ETag: c.etag})
		if err == nil || !conflict(err) {
			return err
		}
		if err := giveUp(ctx, round, "abort", pk, rk); err != nil {
			return err
		}
	}
}

// maxRounds bounds the rounds of one entity's loop: another writer winning every round
// this often is a hot entity, reported rather than retried for ever.
const maxRounds = 32

// giveUp ends the loop of (pk, rk) at its round when ctx ended or another writer won
// every round (ErrTransient); nil goes on.
func giveUp(ctx context.Context, round int, what, pk, rk string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if round >= maxRounds {
		return fmt.Errorf("migrate: %s of (%s, %s): changed in each of %d rounds: %w", what, pk, rk, round, errs.ErrTransient)
	}
	return nil
}
