package migrate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/internal/rangejob"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// The kinds of range jobs, also the queueworker kinds Register handles.
const (
	KindBackfill = "migrate-backfill"
	KindVerify   = "migrate-verify"
	KindCleanUp  = "migrate-cleanup"
	KindAbort    = "migrate-abort"
)

// The phases of a range job: the old layout's entities, then the new layout's copies.
const (
	phaseSource = 0
	phaseTarget = 1
)

var jobStage = map[string]Stage{KindBackfill: Backfill, KindVerify: Verify, KindCleanUp: CleanUp, KindAbort: Aborting}

var jobOf = map[Stage]string{Backfill: KindBackfill, Verify: KindVerify, CleanUp: KindCleanUp, Aborting: KindAbort}

// phases lists each kind's phases: backfill reads the old layout; verify and clean-up
// both (the copies, for orphans); abort the copies.
var phases = map[string][2]int{
	KindBackfill: {phaseSource, phaseSource}, KindVerify: {phaseSource, phaseTarget},
	KindCleanUp: {phaseSource, phaseTarget}, KindAbort: {phaseTarget, phaseTarget},
}

// Job is one range job: every row of the partitions PartitionKeyFrom <= PartitionKey <
// PartitionKeyTo (empty: open) of the table its Phase scans (the old layout, or the
// copies), after the checkpoint After. A migration's job selects whole partitions, never
// by a condition: every entity must go through each stage. It is what a queue message
// carries, and is validated (package patterns/internal/rangejob) before anything is
// read.
type Job struct {
	Migration        string `json:"migration"`
	Kind             string `json:"kind"`
	Phase            int    `json:"phase,omitempty"`
	PartitionKeyFrom string `json:"pkFrom,omitempty"`
	PartitionKeyTo   string `json:"pkTo,omitempty"`
	// After is the checkpoint: the keys of the last row an earlier delivery scanned.
	After *Key `json:"after,omitempty"`
	// Parts is the number of jobs Jobs split the kind's work into (0: unknown), what
	// Progress reports as the total of ranges.
	Parts int `json:"parts,omitempty"`
}

// maxParts bounds Job.Parts.
const maxParts = 1 << 20

// Key is a position in a table: a PartitionKey and a RowKey (pk and rk in JSON).
type Key rangejob.Key

func (j Job) selection() rangejob.Selection {
	return rangejob.Selection{PartitionKeyFrom: j.PartitionKeyFrom, PartitionKeyTo: j.PartitionKeyTo, After: (*rangejob.Key)(j.After)}
}

// Validate checks a job (one read from a queue is untrusted).
//
// Errors: ErrInvalidInput naming the field.
func (j Job) Validate() error {
	p, ok := phases[j.Kind]
	switch {
	case !ok:
		return errs.Invalid("Job.Kind", "not a migration job kind")
	case !nameRE.MatchString(j.Migration):
		return errs.Invalid("Job.Migration", "not a migration name")
	case j.Phase != p[0] && j.Phase != p[1]:
		return errs.Invalid("Job.Phase", "not a phase of %s", j.Kind)
	case j.Parts < 0 || j.Parts > maxParts:
		return errs.Invalid("Job.Parts", "must be 0 to %d", maxParts)
	}
	return j.selection().Validate()
}

// scanner reads one page of a range job's rows (keys and the copies' own properties, or
// whole entities) through the job's rangejob selection: every key returned must lie
// inside the range, after the checkpoint and ascending, or the page is refused.
type scanner struct {
	table *repo.Table[codec.Entity]
	plan  *rangejob.Plan
	extra filter.Expr
	skip  func(*codec.Entity) bool
	size  int
	whole bool
}

func (m *Migration[O, N]) scanner(j Job) (scanner, error) {
	plan, err := j.selection().Plan()
	if err != nil {
		return scanner{}, err
	}
	if j.Phase == phaseTarget {
		return scanner{table: m.tgt, plan: plan, extra: filter.Eq(PropMigration, m.spec.Name), size: m.opts.PageSize}, nil
	}
	return scanner{table: m.src, plan: plan, size: m.opts.PageSize, skip: func(e *codec.Entity) bool {
		return m.sameTable && e.Properties[PropMigration] != nil
	}}, nil
}

// page returns the rows to act on after the checkpoint after, the checkpoint of the
// next page (the last key scanned) and whether there is more; a row whose keys cannot be
// addressed goes to odd and is left.
func (s scanner) page(ctx context.Context, after *Key, odd func(Key)) ([]codec.Entity, *Key, bool, error) {
	f, err := s.plan.Scan((*rangejob.Key)(after))
	if err != nil {
		return nil, nil, false, err
	}
	sel := scanProps
	if s.whole {
		sel = nil
	}
	p := s.table.Pages(repo.Query{Filter: filter.And(f, s.extra), Select: sel, PageSize: s.size})
	var page repo.Page[codec.Entity]
	for len(page.Items) == 0 && p.More() { // a page may be empty and still continue
		if page, err = p.Next(ctx); err != nil {
			return nil, nil, false, tableGone(err)
		}
	}
	rows := page.Items[:0:0]
	last := after
	for _, e := range page.Items {
		k := Key{PartitionKey: e.PartitionKey, RowKey: e.RowKey}
		if err := s.plan.CheckPosition("scan", rangejob.Key(k)); err != nil {
			return nil, nil, false, err
		}
		if last != nil && (keys.Compare(k.PartitionKey, last.PartitionKey) < 0 ||
			k.PartitionKey == last.PartitionKey && keys.Compare(k.RowKey, last.RowKey) <= 0) {
			return nil, nil, false, errs.Invalid("scan", "the store returned (%s, %s) out of key order", k.PartitionKey, k.RowKey)
		}
		last = &k
		switch {
		case rangejob.Addressable(rangejob.Key(k)) != nil:
			odd(k)
		case s.skip == nil || !s.skip(&e):
			rows = append(rows, e)
		}
	}
	return rows, last, page.Token != "", nil
}

// RunJob runs one page of job and returns the job that continues it (nil when the range
// is done) and what it saw. Each entity is handled under the stage rules of enter: a job
// whose stage is not the migration's settled stage stops with ErrWrongStage.
//
// Errors: ErrInvalidInput (job), ErrWrongStage, ErrTransient, *repo.Error.
func (m *Migration[O, N]) RunJob(ctx context.Context, job Job) (*Job, Report, error) {
	rep := Report{}
	if err := job.Validate(); err != nil {
		return nil, rep, err
	}
	if job.Migration != m.spec.Name {
		return nil, rep, errs.Invalid("Job.Migration", "another migration's job")
	}
	sc, err := m.scanner(job)
	if err != nil {
		return nil, rep, err
	}
	scanAt := time.Now()
	rows, last, more, err := sc.page(ctx, job.After, func(k Key) { rep.foreign(k.PartitionKey, k.RowKey) })
	if err != nil {
		return nil, rep, err
	}
	if job.Kind == KindAbort {
		err = each(ctx, m.opts.Concurrency, rows, func(ctx context.Context, row *codec.Entity, r *Report) error {
			return m.act(ctx, job, row, r)
		}, &rep)
	} else {
		err = m.runPage(ctx, job, rows, scanAt, &rep)
	}
	if err != nil {
		return nil, rep, err
	}
	switch p := phases[job.Kind]; {
	case more:
		job.After = last
	case job.Phase != p[1]:
		job.Phase, job.After = p[1], nil
	default:
		return nil, rep, nil
	}
	return &job, rep, nil
}

// each runs fn on rows through retry.Schedule: conc at once, at most half of them on
// the entities of one old partition, partitions taken in turn, each task's context
// marked with its partition (so that a throttled partition slows only itself). It
// returns the first error.
func each(ctx context.Context, conc int, rows []codec.Entity, fn func(context.Context, *codec.Entity, *Report) error, rep *Report) error {
	parts := make([]string, len(rows))
	for i := range rows {
		parts[i] = rows[i].PartitionKey
	}
	var mu sync.Mutex
	return retry.Schedule(ctx, parts, &retry.ScheduleOptions{Concurrency: conc, PartitionConcurrency: max(1, conc/2)}, func(ctx context.Context, i int) error {
		var r Report
		r.Scanned = 1
		err := fn(ctx, &rows[i], &r)
		mu.Lock()
		rep.add(r)
		mu.Unlock()
		return err
	})
}

// RunAll runs every page of one kind's job over the whole table, in this process; a
// page that fails for a reason that can pass runs again (up to 5 attempts).
//
// Errors: as RunJob.
func (m *Migration[O, N]) RunAll(ctx context.Context, kind string) (Report, error) {
	p, ok := phases[kind]
	if !ok {
		return Report{}, errs.Invalid("kind", "not a migration job kind")
	}
	total := Report{}
	failed := 0
	for job := (&Job{Migration: m.spec.Name, Kind: kind, Phase: p[0], Parts: 1}); job != nil; {
		next, rep, err := m.RunJob(ctx, *job)
		total.add(rep)
		if err != nil {
			// A page is idempotent: one that failed (an entity's deadline, a conflict
			// lost maxRounds times) runs again, a few times, unless the failure is final.
			if failed++; failed >= pageAttempts || final(err) || ctx.Err() != nil {
				return total, err
			}
			continue
		}
		m.pageDone(ctx, *job, rep, next)
		failed, job = 0, next
	}
	m.opts.Logger.Info(fmt.Sprintf("migrate: %s done", kind), total.fields()...)
	return total, nil
}

// pageAttempts bounds RunAll's attempts at one page.
const pageAttempts = 5

// final reports the errors a page's next attempt would meet again.
func final(err error) bool {
	return errors.Is(err, errs.ErrInvalidInput) || errors.Is(err, ErrWrongStage)
}

// sourceOf returns the old keys a copy records, when it is this migration's copy of them
// at the new keys they map to.
func (m *Migration[O, N]) sourceOf(row *codec.Entity) (string, string, bool) {
	pk, _ := row.Properties[PropSourcePK].(string)
	rk, _ := row.Properties[PropSourceRK].(string)
	if name, _ := row.Properties[PropMigration].(string); name != m.spec.Name || checkKeys(pk, rk) != nil {
		return "", "", false
	}
	npk, nrk, err := m.newKeys(pk, rk)
	return pk, rk, err == nil && npk == row.PartitionKey && nrk == row.RowKey
}

var scanProps = append([]string{"PartitionKey", "RowKey"}, metaProps...)
