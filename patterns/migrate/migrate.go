package migrate

import (
	"context"
	"errors"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Plan checks that Keys maps no two old keys to one and, in a same-table migration, no
// new key onto an existing old key, then writes the state record (Stage Planned).
//
// Errors: ErrInvalidInput (a collision, a key Keys refuses), ErrInProgress, ErrTransient,
// *repo.Error.
func (m *Migration[O, N]) Plan(ctx context.Context) error {
	if err := m.checkKeys(ctx); err != nil {
		return err
	}
	if err := m.tgt.CreateIfNotExists(ctx); err != nil {
		return err
	}
	return m.create(ctx)
}

// Advance takes the migration one stage on: it waits until the current stage has settled
// (every process follows it), runs the stage's background work to its end (Backfill,
// Verify, CleanUp, Aborting), then records the next stage If-Match the record read.
//
// Errors: errs.ErrNotFound (not planned), errs.ErrPreconditionFailed (another process
// moved the record first), errs.ErrOutcomeUnknown (an answer lost and the record's
// history cannot tell), the work's errors. A transition that landed succeeds, and the
// State returned is the record read after it, which another process may have moved on.
func (m *Migration[O, N]) Advance(ctx context.Context) (State, error) {
	st, err := m.load(ctx)
	if err != nil || st.Stage == "" {
		return st, notPlanned(st, err)
	}
	to, ok := next[st.Stage]
	if !ok {
		return st, nil // Done or Aborted
	}
	if err := m.waitSettled(ctx, st); err != nil {
		return st, err
	}
	if kind, ok := jobOf[st.Stage]; ok {
		if _, err := m.RunAll(ctx, kind); err != nil {
			return st, err
		}
	}
	return m.transition(ctx, st, to)
}

// Abort turns back a migration before CleanUp: writes go to the old layout only, reads
// read it only, and Advance then removes every copy (Aborting -> Aborted).
//
// Errors: ErrInvalidInput (CleanUp or later), errs.ErrNotFound, as Advance.
func (m *Migration[O, N]) Abort(ctx context.Context) (State, error) {
	st, err := m.load(ctx)
	if err != nil || st.Stage == "" || st.Stage == Aborting || st.Stage == Aborted {
		return st, notPlanned(st, err)
	}
	if st.Stage == CleanUp || st.Stage == Done {
		return st, errs.Invalid("Abort", "the migration is at %s: the old layout is being removed", st.Stage)
	}
	return m.transition(ctx, st, Aborting)
}

// enter returns the stage whose rules an operation starting now follows, and a context
// that ends by the operation's deadline. Until a transition has settled, the previous
// stage's rules apply, under a deadline that ends before any process applies the new
// ones; so writes of two stages never overlap.
func (m *Migration[O, N]) enter(ctx context.Context) (Stage, context.Context, context.CancelFunc, error) {
	for {
		st, err := m.state(ctx)
		if err != nil {
			return "", ctx, func() {}, err
		}
		now := time.Now()
		if st.Since.IsZero() || !now.Before(st.Since.Add(m.opts.settle())) {
			c, cancel := context.WithTimeout(ctx, m.opts.WriteTimeout)
			return orPlanned(st.Stage), c, cancel, nil
		}
		end := st.Since.Add(m.opts.Refresh + m.opts.WriteTimeout + m.opts.ClockSkew)
		if end.Sub(now) >= m.opts.WriteTimeout/4 {
			c, cancel := context.WithDeadline(ctx, earliest(end, now.Add(m.opts.WriteTimeout)))
			return orPlanned(st.Previous), c, cancel, nil
		}
		if err := m.waitSettled(ctx, st); err != nil {
			return "", ctx, func() {}, err
		}
	}
}

// write is every application write: by stage, the old layout then the copy (dual
// write), the old layout then the copy's removal (abort), or the new layout alone once
// clean-up began.
func (m *Migration[O, N]) write(ctx context.Context, op op, v *O, pk, rk, etag string) error {
	stage, ctx, cancel, err := m.enter(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	switch stage {
	case CleanUp, Done:
		return m.writeNew(ctx, stage, op, v, pk, rk, etag)
	}
	if err := m.writeOld(ctx, op, v, pk, rk, etag); err != nil {
		return err
	}
	switch stage {
	case DualWrite, Backfill, Verify, CutOver:
		_, err = m.converge(ctx, pk, rk, false)
	case Aborting:
		err = m.dropCopy(ctx, pk, rk)
	}
	return err
}

// Get reads the entity with the old keys (pk, rk) in its new shape. Before CutOver it
// reads the old layout (and transforms); at CutOver and CleanUp it reads the copy first
// and serves it when it is detached or records the old entity's current version, the
// old entity otherwise; at Done the copy alone.
//
// Errors: errs.ErrNotFound, ErrInvalidInput (a row that is not this migration's copy),
// ErrTransient, *repo.Error.
func (m *Migration[O, N]) Get(ctx context.Context, pk, rk string) (N, error) {
	var zero N
	stage, ctx, cancel, err := m.enter(ctx)
	defer cancel()
	if err != nil {
		return zero, err
	}
	if stage == CutOver || stage == CleanUp || stage == Done {
		c, err := m.readCopy(ctx, pk, rk)
		switch {
		case err != nil:
			return zero, err
		case c.found && c.detached && stage == CutOver:
			return zero, forgedDetached(pk, rk)
		case c.found && (c.detached || stage == Done):
			return m.decodeNew(c.e, c.etag)
		case stage == Done:
			return zero, present(version{}, nil, pk, rk)
		}
		s, err := m.readSourceAfterCopy(ctx, pk, rk)
		if err == nil && !s.found && stage == CleanUp {
			// The clean-up may have finished the entity since the copy was read: the
			// copy detached, then the old entity deleted. Once the old entity is gone
			// nothing writes the old layout again, so the copy read now decides.
			if c, err = m.readCopy(ctx, pk, rk); err != nil {
				return zero, err
			}
			if c.found && c.detached {
				return m.decodeNew(c.e, c.etag)
			}
		}
		if err := present(s, err, pk, rk); err != nil {
			return zero, err
		}
		if c.found && c.srcETag == s.etag {
			return m.decodeNew(c.e, s.etag)
		}
		return m.fromOld(s, pk, rk)
	}
	s, err := m.readSource(ctx, pk, rk)
	if err := present(s, err, pk, rk); err != nil {
		return zero, err
	}
	return m.fromOld(s, pk, rk)
}

// converge is the copy rule: it makes the copy of (pk, rk) hold the old entity's current
// version, or removes it when the old entity is gone. The copy is read before the old
// entity, so an old version other than the one the copy records is a newer one; the copy
// is written If-Match what was read; and the old entity is read again after the write:
// changed or gone since, the round starts over. So writers, backfill and deletes
// converge, and a deleted entity never comes back. It reports whether it wrote.
// cleaning is true under CleanUp's rules: only clean-up detaches a copy, so before it a
// detached copy was not written by the migration and is refused, never trusted.
func (m *Migration[O, N]) converge(ctx context.Context, pk, rk string, cleaning bool) (bool, error) {
	wrote := false
	for round := 1; ; round++ {
		c, err := m.readCopy(ctx, pk, rk)
		if err == nil && c.detached && !cleaning {
			return wrote, forgedDetached(pk, rk)
		}
		if err != nil || c.detached {
			return wrote, err
		}
		s, err := m.readSource(ctx, pk, rk)
		switch {
		case err != nil:
			return wrote, err
		case !s.found && !c.found, c.found && s.found && c.srcETag == s.etag:
			return wrote, nil
		case !s.found:
			err = m.dropStale(ctx, c)
		default:
			err = m.writeCopy(ctx, s, c, pk, rk)
		}
		if err == nil {
			wrote = true
			again, rerr := m.confirmSource(ctx, pk, rk)
			if rerr != nil || again.found == s.found && again.etag == s.etag {
				return wrote, rerr
			}
		}
		if err != nil && !conflict(err) {
			return wrote, err
		}
		if err := giveUp(ctx, round, "copy", pk, rk); err != nil {
			return wrote, err
		}
	}
}

// finish is clean-up for one entity: the copy made current, then marked detached, then
// the old entity deleted If-Match the version the copy holds.
func (m *Migration[O, N]) finish(ctx context.Context, pk, rk string) error {
	for round := 1; ; round++ {
		if _, err := m.converge(ctx, pk, rk, true); err != nil {
			return err
		}
		c, err := m.readCopy(ctx, pk, rk)
		if err != nil || !c.found {
			return err // no copy: converge found the old entity gone too
		}
		if !c.detached {
			err = m.detach(ctx, c)
		} else if err = m.deleteOldBehind(ctx, c, pk, rk); errors.Is(err, repo.ErrPreconditionFailed) {
			// No process writes the old layout once clean-up began, and the copy was
			// detached at the old version it records: a detached copy of another
			// version was not made by the migration. Refused; the old entity stays.
			return errs.Invalid("copy", "the detached copy of (%s, %s) records a version the old entity does not hold", pk, rk)
		}
		switch {
		case err == nil && c.detached:
			return nil
		case err != nil && !conflict(err):
			return err
		}
		if err := giveUp(ctx, round, "clean-up", pk, rk); err != nil {
			return err
		}
	}
}

// act is one row of an abort job (a copy): the copy dropped, abort's rule. The other
// range jobs take their rows a chunk at a time (page.go).
func (m *Migration[O, N]) act(ctx context.Context, job Job, row *codec.Entity, rep *Report) error {
	stage, ctx, cancel, err := m.enter(ctx)
	defer cancel()
	if err != nil || stage != jobStage[job.Kind] {
		return wrongStage(err, job.Kind, stage)
	}
	pk, rk, ok := m.sourceOf(row)
	if !ok {
		rep.foreign(row.PartitionKey, row.RowKey)
		return nil
	}
	return m.dropCopy(ctx, pk, rk)
}
