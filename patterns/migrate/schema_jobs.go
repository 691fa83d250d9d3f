package migrate

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/internal/rangejob"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// The kinds of a staged schema migration's range jobs, also the queueworker kinds its
// Register handles.
const (
	// KindSchemaRewrite upgrades every entity of an older version (Backfill).
	KindSchemaRewrite = "migrate-schema-rewrite"
	// KindSchemaVerify counts the entities below the latest version and upgrades them
	// (Verify).
	KindSchemaVerify = "migrate-schema-verify"
	// KindSchemaDowngrade downgrades every entity of the latest version (Aborting).
	KindSchemaDowngrade = "migrate-schema-downgrade"
)

var schemaJobStage = map[string]Stage{KindSchemaRewrite: Backfill, KindSchemaVerify: Verify, KindSchemaDowngrade: Aborting}

var schemaJobOf = map[Stage]string{Backfill: KindSchemaRewrite, Verify: KindSchemaVerify, Aborting: KindSchemaDowngrade}

// validJob checks a schema job (one read from a queue is untrusted): a kind of this
// package's schema jobs, this migration's name, one phase, a valid range.
func (s *Schema[T]) validJob(j Job) error {
	if err := s.stages(); err != nil {
		return err
	}
	switch _, ok := schemaJobStage[j.Kind]; {
	case !ok:
		return errs.Invalid("Job.Kind", "not a schema migration job kind")
	case !nameRE.MatchString(j.Migration):
		return errs.Invalid("Job.Migration", "not a migration name")
	case j.Migration != s.spec.Name:
		return errs.Invalid("Job.Migration", "another migration's job")
	case j.Phase != phaseSource:
		return errs.Invalid("Job.Phase", "not a phase of %s", j.Kind)
	case j.Parts < 0 || j.Parts > maxParts:
		return errs.Invalid("Job.Parts", "must be 0 to %d", maxParts)
	}
	return j.selection().Validate()
}

// StageJob returns the kind of the schema job whose work Advance runs at stage (false:
// none), as Migration.StageJob.
func (s *Schema[T]) StageJob(stage Stage) (string, bool) {
	kind, ok := schemaJobOf[stage]
	return kind, ok
}

// Jobs returns the job of kind split into parts by partition bounds (sorted, each a
// PartitionKey where a part begins): parts that workers run at once.
//
// Errors: ErrInvalidInput.
func (s *Schema[T]) Jobs(kind string, bounds ...string) ([]Job, error) {
	edges := append(append([]string{""}, bounds...), "")
	out := make([]Job, 0, len(edges)-1)
	for i := 0; i+1 < len(edges); i++ {
		j := Job{Migration: s.spec.Name, Kind: kind, PartitionKeyFrom: edges[i], PartitionKeyTo: edges[i+1], Parts: len(edges) - 1}
		if err := s.validJob(j); err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, nil
}

// EnqueueJob puts a schema job on the queue of c, for a worker that registered the
// migration (Register).
//
// Errors: ErrInvalidInput (job), those of queueworker.Enqueue.
func (s *Schema[T]) EnqueueJob(ctx context.Context, c *queueworker.Client, job Job) error {
	if err := s.validJob(job); err != nil {
		return err
	}
	return enqueue(ctx, c, job)
}

// Register adds the handlers of the schema job kinds for this migration to r, with the
// delivery rules of Migration.Register: one page per delivery and its continuation
// enqueued on SchemaOptions.Queue (without it, the whole range); a job that does not
// validate is cancelled; one of a stage not yet settled is snoozed, one of a stage
// already left is dropped; a downgrade job (KindSchemaDowngrade) acts only once the
// record says Aborting, as Migration.Register's abort job: cancelled before, dropped
// after Aborted.
//
// Errors: ErrInvalidInput (no Name), those of queueworker.Handle.
func (s *Schema[T]) Register(r *queueworker.Registry) error {
	if err := s.stages(); err != nil {
		return err
	}
	for kind := range schemaJobStage {
		if err := queueworker.Handle(r, kind, s.handle); err != nil {
			return err
		}
	}
	return nil
}

func (s *Schema[T]) handle(ctx context.Context, msg *queueworker.Message[Job]) error {
	job := msg.Payload
	if job.Kind != msg.Kind {
		return queueworker.Cancel(errs.Invalid("Job.Kind", "differs from the message's kind"))
	}
	if job.Kind == KindSchemaDowngrade && s.validJob(job) == nil {
		if run, err := s.m.abortRecorded(ctx, job); !run || err != nil {
			return err
		}
	}
	for {
		next, rep, err := s.RunJob(ctx, job)
		var se *StageError
		switch {
		case errors.As(err, &se):
			if rank[se.Stage] < rank[schemaJobStage[job.Kind]] {
				return queueworker.Snooze(s.m.opts.settle())
			}
			return nil
		case errors.Is(err, errs.ErrInvalidInput):
			return queueworker.Cancel(err)
		case err != nil:
			return err
		}
		s.pageRecorded(ctx, job, next, rep)
		if next == nil {
			return nil
		}
		if s.opts.Queue != nil {
			return s.EnqueueJob(ctx, s.opts.Queue, *next)
		}
		job = *next
	}
}

// RunJob runs one page of a schema job and returns the job that continues it (nil when
// the range is done) and what it saw. Each entity is handled under the stage rules: a
// job whose stage is not the migration's settled stage stops with ErrWrongStage (a
// *StageError).
//
// Errors: ErrInvalidInput (job, a page the store returned out of its range or order),
// ErrWrongStage, ErrTransient, *repo.Error.
func (s *Schema[T]) RunJob(ctx context.Context, job Job) (*Job, SchemaReport, error) {
	rep := SchemaReport{}
	if err := s.validJob(job); err != nil {
		return nil, rep, err
	}
	plan, err := job.selection().Plan()
	if err != nil {
		return nil, rep, err
	}
	rows, last, more, err := s.page(ctx, plan, job.After, &rep)
	if err != nil {
		return nil, rep, err
	}
	var mu sync.Mutex
	err = each(ctx, s.opts.Concurrency, rows, func(ctx context.Context, e *codec.Entity, _ *Report) error {
		var r SchemaReport
		err := s.act(ctx, job.Kind, *e, &r)
		mu.Lock()
		rep.add(r)
		mu.Unlock()
		return err
	}, &Report{})
	if err != nil || !more {
		return nil, rep, err
	}
	job.After = last
	return &job, rep, nil
}

// act is one entity of a schema job, under the stage rules of the job's stage.
func (s *Schema[T]) act(ctx context.Context, kind string, e codec.Entity, rep *SchemaReport) error {
	stage, ctx, cancel, err := s.m.enter(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	if stage != schemaJobStage[kind] {
		return &StageError{Kind: kind, Stage: stage}
	}
	var n int
	switch kind {
	case KindSchemaDowngrade:
		n, err = s.downgradeOne(ctx, e)
	case KindSchemaVerify:
		if v, verr := s.version(&e); verr == nil && v < s.Latest() {
			rep.stale(e.PartitionKey, e.RowKey)
		}
		fallthrough
	default:
		n, err = s.rewriteOne(ctx, e)
	}
	if rep.refusedBy(err, e.PartitionKey, e.RowKey) {
		return nil
	}
	if errors.Is(err, errs.ErrInvalidInput) {
		n, err = 2, nil // an unknown version is left
	}
	switch {
	case n == 0 && kind == KindSchemaDowngrade:
		rep.Downgraded++
	case n == 0:
		rep.Rewritten++
	case n == 1:
		rep.Current++
	default:
		rep.Unknown++
	}
	return err
}

// downgradeOne brings one entity of the latest version back to the one before it
// (replace: a writer that wrote meanwhile, at that version once Aborting settled, or
// deleted it, wins). 0 when it wrote, 1 when the entity was not of the latest version
// (or gone).
func (s *Schema[T]) downgradeOne(ctx context.Context, e codec.Entity) (int, error) {
	return s.replace(ctx, e, "downgrade", func(e *codec.Entity) (bool, error) {
		if v, err := s.version(e); err != nil || v != s.Latest() {
			return false, err
		}
		return true, s.downgrade(e)
	})
}

// beforeWrite runs the test seam between a rewrite's (or downgrade's) read of an entity
// and its write: the window a writer's newer write must survive.
func (s *Schema[T]) beforeWrite(ctx context.Context, pk, rk string) {
	if s.m != nil {
		s.m.seams.beforeCopyWrite(ctx, pk, rk)
	}
}

// page reads one page of a schema job's rows after the checkpoint after, whole (the
// rewrite writes what it read), through the re-keying jobs' scanner: every key returned
// must lie inside the range, after the checkpoint and ascending, or the page is refused;
// a row whose keys cannot be addressed is counted unknown and left.
func (s *Schema[T]) page(ctx context.Context, plan *rangejob.Plan, after *Key, rep *SchemaReport) ([]codec.Entity, *Key, bool, error) {
	unknown := 0
	rows, last, more, err := scanner{table: s.raw, plan: plan, size: s.opts.PageSize, whole: true}.page(ctx, after, func(Key) { unknown++ })
	if err != nil {
		return nil, nil, false, err
	}
	rep.Unknown += unknown
	rep.Scanned += len(rows) + unknown
	return rows, last, more, nil
}

// RunAll runs every page of one kind's schema job over the whole table, in this
// process; a page that fails for a reason that can pass runs again (up to 5 attempts).
//
// Errors: as RunJob.
func (s *Schema[T]) RunAll(ctx context.Context, kind string) (SchemaReport, error) {
	total := SchemaReport{}
	failed := 0
	for job := (&Job{Migration: s.spec.Name, Kind: kind, Parts: 1}); job != nil; {
		next, rep, err := s.RunJob(ctx, *job)
		total.add(rep)
		if err != nil {
			if failed++; failed >= pageAttempts || final(err) || ctx.Err() != nil {
				return total, err
			}
			continue
		}
		s.pageRecorded(ctx, *job, next, rep)
		failed, job = 0, next
	}
	s.opts.Logger.Info(fmt.Sprintf("migrate: %s done", kind), zap.Int("scanned", total.Scanned), zap.Int("rewritten", total.Rewritten),
		zap.Int("downgraded", total.Downgraded), zap.Int("stale", total.Stale), zap.Int("unknown", total.Unknown), zap.Int("refused", total.Refused))
	return total, nil
}

func (r *SchemaReport) add(o SchemaReport) {
	r.Scanned += o.Scanned
	r.Rewritten += o.Rewritten
	r.Current += o.Current
	r.Unknown += o.Unknown
	r.Downgraded += o.Downgraded
	r.Stale += o.Stale
	r.Refused += o.Refused
	for _, k := range o.RefusedKeys {
		if len(r.RefusedKeys) < MaxReportKeys {
			r.RefusedKeys = append(r.RefusedKeys, k)
		}
	}
	for pk, n := range o.Partitions {
		if r.Partitions == nil {
			r.Partitions = map[string]int{}
		}
		r.Partitions[pk] += n
	}
	for _, k := range o.Keys {
		if len(r.Keys) < MaxReportKeys {
			r.Keys = append(r.Keys, k)
		}
	}
}

// stale counts an entity verify found below the latest version.
func (r *SchemaReport) stale(pk, rk string) {
	r.add(SchemaReport{Stale: 1, Partitions: map[string]int{pk: 1}, Keys: [][2]string{{pk, rk}}})
}
