package migrate

import (
	"context"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// A staged schema migration (SchemaSpec.Name) shares the re-keying migration's state
// record, stages and staleness bound: its Migration (source and target the table, keys
// and values unchanged) is used only for them, never for its copy rule.

// staged builds the migration that holds the stages of s.
func (s *Schema[T]) staged() (*Migration[T, T], error) {
	same := func(pk, rk string) (string, string, error) { return pk, rk, nil }
	m, err := New(Spec[T, T]{Name: s.spec.Name, Service: s.spec.Service, Source: s.spec.Table, Target: s.spec.Table,
		Keys: same, Transform: func(v T) (T, error) { return v, nil }, Control: s.spec.Control},
		&Options{Refresh: s.opts.Refresh, WriteTimeout: s.opts.WriteTimeout, ClockSkew: s.opts.ClockSkew,
			Retry: s.opts.Retry, Concurrency: s.opts.Concurrency, Queue: s.opts.Queue, Logger: s.opts.Logger})
	if err != nil {
		return nil, err
	}
	m.kind = kindSchema
	return m, nil
}

// rules returns whether an operation starting now writes the latest version (else the
// one before it) and a context that ends by the operation's deadline (the stage rules of
// Migration.enter: an operation under one stage's rules never overlaps one under the
// next stage's).
func (s *Schema[T]) rules(ctx context.Context) (bool, context.Context, context.CancelFunc, error) {
	if s.m == nil {
		return true, ctx, func() {}, nil
	}
	stage, ctx, cancel, err := s.m.enter(ctx)
	return s.writesLatest(stage), ctx, cancel, err
}

// writesLatest is the version rule of a stage: with Downgrades, the version before the
// latest until Backfill (the processes of a rolling deploy that still run the code of
// that version read what is written) and again while aborting; the latest otherwise.
func (s *Schema[T]) writesLatest(stage Stage) bool {
	if len(s.spec.Downgrades) == 0 {
		return true
	}
	switch stage {
	case Planned, DualWrite, Aborting:
		return false
	}
	return true
}

// from is the version a staged migration starts from and an abort returns to.
func (s *Schema[T]) from() int { return s.Latest() - 1 }

// downgrade brings an entity of the latest version back to the one before it, in place.
func (s *Schema[T]) downgrade(e *codec.Entity) error {
	if err := s.spec.Downgrades[s.from()-1](e); err != nil {
		return &refusal{errs.Invalid("SchemaSpec.Downgrades", "version %d of (%s, %s): %v", s.Latest(), e.PartitionKey, e.RowKey, errs.Redact(err))}
	}
	e.Properties[s.spec.VersionProperty] = int32(s.from())
	return nil
}

func (s *Schema[T]) stages() error {
	if s.m == nil {
		return errs.Invalid("SchemaSpec.Name", "required to take a schema evolution through the stages")
	}
	return nil
}

// Plan writes the state record of the staged migration (Stage Planned). A re-keying or
// schema migration of the same table that has not ended is refused.
//
// Errors: ErrInvalidInput (no Name), ErrInProgress, ErrTransient, *repo.Error.
func (s *Schema[T]) Plan(ctx context.Context) error {
	if err := s.stages(); err != nil {
		return err
	}
	return s.m.create(ctx)
}

// Advance takes the staged migration one stage on: it waits until the current stage has
// settled, runs the stage's range job to its end in this process (Backfill: rewrite,
// Verify: verify, Aborting: downgrade), then records the next stage If-Match the record
// read. While that pass leaves an entity its upgrade or downgrade refused, the next
// stage is not recorded (schema_refused.go).
//
// Errors: ErrInvalidInput (no Name), errs.ErrNotFound (not planned),
// errs.ErrPreconditionFailed (another process moved the record), ErrStageIncomplete
// (*IncompleteError naming the refused entities' keys), the jobs' errors.
func (s *Schema[T]) Advance(ctx context.Context) (State, error) {
	if err := s.stages(); err != nil {
		return State{}, err
	}
	st, err := s.m.load(ctx)
	if err != nil || st.Stage == "" {
		return st, notPlanned(st, err)
	}
	to, ok := next[st.Stage]
	if !ok {
		return st, nil // Done or Aborted
	}
	if err := s.m.waitSettled(ctx, st); err != nil {
		return st, err
	}
	if kind, ok := schemaJobOf[st.Stage]; ok {
		rep, err := s.RunAll(ctx, kind)
		if err == nil {
			err = leftBehind(st.Stage, rep)
		}
		if err != nil {
			return st, err
		}
	}
	return s.m.transition(ctx, st, to)
}

// Abort turns back a staged migration before CleanUp: once it settled every process
// writes the version before the latest again, and Advance downgrades every entity of
// the latest version (Aborting -> Aborted).
//
// Errors: ErrInvalidInput (no Name, no Downgrades: before any request; CleanUp or
// later), errs.ErrNotFound, as Advance.
func (s *Schema[T]) Abort(ctx context.Context) (State, error) {
	if err := s.stages(); err != nil {
		return State{}, err
	}
	if len(s.spec.Downgrades) == 0 {
		return State{}, errs.Invalid("SchemaSpec.Downgrades", "required to abort a schema migration")
	}
	return s.m.Abort(ctx)
}

// Status reads the state record (fresh).
//
// Errors: ErrInvalidInput (no Name; a record that does not validate), ErrInProgress
// (another migration's), ErrTransient, *repo.Error.
func (s *Schema[T]) Status(ctx context.Context) (State, error) {
	if err := s.stages(); err != nil {
		return State{}, err
	}
	return s.m.Status(ctx)
}

// WaitSettled waits until the current stage has settled: every process follows it.
//
// Errors: as Status; ctx's error.
func (s *Schema[T]) WaitSettled(ctx context.Context) (State, error) {
	if err := s.stages(); err != nil {
		return State{}, err
	}
	return s.m.WaitSettled(ctx)
}
