package migrate

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// rank orders the stages for a worker deciding about a job of another stage.
var rank = map[Stage]int{Planned: 0, DualWrite: 1, Backfill: 2, Verify: 3, CutOver: 4, CleanUp: 5, Done: 6, Aborting: 7, Aborted: 8}

// Register adds the handlers of the range-job kinds (KindBackfill, KindVerify,
// KindCleanUp, KindAbort) for this migration to r. A delivery runs one page and, with
// Options.Queue, enqueues its continuation before it returns (a stop anywhere leaves
// this message or the continuation; both are safe to run, twice or at once); without
// it, the whole range. A job of another migration, or one that does not validate, is
// cancelled (poison queue); a job of a stage not yet settled is snoozed, one of a stage
// already left is dropped. An abort job (KindAbort) acts only once the record says
// Aborting: delivered before, when the migration may never be aborted, it is cancelled
// (requeue it from the poison queue after Abort); after Aborted it is dropped.
//
// Errors: those of queueworker.Handle.
func (m *Migration[O, N]) Register(r *queueworker.Registry) error {
	for kind := range jobStage {
		if err := queueworker.Handle(r, kind, m.handle); err != nil {
			return err
		}
	}
	return nil
}

func (m *Migration[O, N]) handle(ctx context.Context, msg *queueworker.Message[Job]) error {
	job := msg.Payload
	if job.Kind != msg.Kind {
		return queueworker.Cancel(errs.Invalid("Job.Kind", "differs from the message's kind"))
	}
	if job.Kind == KindAbort && job.Validate() == nil && job.Migration == m.spec.Name {
		if run, err := m.abortRecorded(ctx, job); !run || err != nil {
			return err
		}
	}
	for {
		next, rep, err := m.RunJob(ctx, job)
		var se *StageError
		switch {
		case errors.As(err, &se):
			if rank[se.Stage] < rank[jobStage[job.Kind]] {
				return queueworker.Snooze(m.opts.settle())
			}
			return nil
		case errors.Is(err, errs.ErrInvalidInput):
			return queueworker.Cancel(err)
		case err != nil:
			return err
		}
		m.pageDone(ctx, job, rep, next)
		if next == nil {
			return nil
		}
		if m.opts.Queue != nil {
			return m.EnqueueJob(ctx, m.opts.Queue, *next)
		}
		job = *next
	}
}

// abortRecorded decides an abort job (KindAbort, or a staged schema migration's
// KindSchemaDowngrade) by the record read now, not by the stage whose rules apply (the
// previous one until the abort settles): it runs at Aborting, is dropped at Aborted, and
// is cancelled at any other stage, which Aborting is not sure to follow.
func (m *Migration[O, N]) abortRecorded(ctx context.Context, job Job) (bool, error) {
	st, err := m.load(ctx)
	switch {
	case err != nil:
		return false, err
	case st.Stage == Aborting:
		return true, nil
	case st.Stage == Aborted:
		m.opts.Logger.Info("migrate: abort job dropped: the migration is aborted", zap.String("pkFrom", job.PartitionKeyFrom), zap.String("pkTo", job.PartitionKeyTo))
		return false, nil
	}
	return false, queueworker.Cancel(fmt.Errorf("migrate: an abort job while the migration is at %s, not aborting (Abort it, then requeue): %w",
		stageName(st.Stage), &StageError{Kind: job.Kind, Stage: st.Stage}))
}

// stageName names a stage for a message; "" is a source table with no migration.
func stageName(s Stage) string {
	if s == "" {
		return "no stage (not planned)"
	}
	return string(s)
}

// pageDone logs the progress of a range job, a page at a time (counts and bounds, never
// values), wherever it runs: a worker's delivery or RunAll (Advance), and records it
// for Progress (progress.go); next is the job that continues it (nil: the range is done).
func (m *Migration[O, N]) pageDone(ctx context.Context, job Job, rep Report, next *Job) {
	m.opts.Logger.Info("migrate: page done", append(rep.fields(), zap.String("kind", job.Kind), zap.String("pkFrom", job.PartitionKeyFrom), zap.String("pkTo", job.PartitionKeyTo), zap.Bool("more", next != nil))...)
	m.recordPage(ctx, job, next, reportCounts(rep))
}

// EnqueueJob puts job, a job of this migration, on the queue of c for a worker that
// registered it (Schema.EnqueueJob is its staged schema evolution's), so that a program
// that runs either kind of migration enqueues through one method.
//
// Errors: ErrInvalidInput (a job of another migration, or one that does not validate),
// those of queueworker.Enqueue.
func (m *Migration[O, N]) EnqueueJob(ctx context.Context, c *queueworker.Client, job Job) error {
	if job.Migration != m.spec.Name {
		return errs.Invalid("Job.Migration", "names another migration")
	}
	if err := job.Validate(); err != nil {
		return err
	}
	return enqueue(ctx, c, job)
}

// enqueue puts a validated job on the queue of c, its message id naming the migration
// and the kind.
func enqueue(ctx context.Context, c *queueworker.Client, job Job) error {
	_, err := queueworker.Enqueue(ctx, c, job.Kind, job.Migration+"|"+job.Kind, job, nil)
	return err
}

// StageJob returns the kind of the range job whose work Advance runs at stage (false:
// none), the kind a program enqueues for workers to share that work (Schema.StageJob is
// its staged schema evolution's).
func (m *Migration[O, N]) StageJob(stage Stage) (string, bool) {
	kind, ok := jobOf[stage]
	return kind, ok
}

// Jobs returns the first job of kind split into parts by partition bounds (sorted, each
// a PartitionKey where a part begins): parts that workers run at once.
//
// Errors: ErrInvalidInput.
func (m *Migration[O, N]) Jobs(kind string, bounds ...string) ([]Job, error) {
	p, ok := phases[kind]
	if !ok {
		return nil, errs.Invalid("kind", "not a migration job kind")
	}
	edges := append(append([]string{""}, bounds...), "")
	out := make([]Job, 0, len(edges)-1)
	for i := 0; i+1 < len(edges); i++ {
		j := Job{Migration: m.spec.Name, Kind: kind, PartitionKeyFrom: edges[i], PartitionKeyTo: edges[i+1], Phase: p[0], Parts: len(edges) - 1}
		if err := j.Validate(); err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, nil
}
