package tablearchive

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
)

// The phases of a long table job, in Progress.Phase.
const (
	// PhaseExport is an archive-table job reading the table into its data blob. Its
	// Total is 0: the size of a table is not known before it is read.
	PhaseExport = "export"
	// PhaseVerify is the check of what was written or is about to be read: an
	// archive-table job reading its data blob back and rescanning the table (Total:
	// twice the entities of its generation), a restore-table job reading every chosen
	// generation before its first write (Total: their entities).
	PhaseVerify = "verify"
	// PhaseDelete is an archive-table job's last check for writes since the export and
	// the delete of the table. Its Entities count the entities the check reads (those
	// written within ClockSkew of the export's start or since), and its Total is how
	// many of those the export saw: the check fails on any other.
	PhaseDelete = "delete"
	// PhaseRestore is a restore-table job writing a generation into the table.
	PhaseRestore = "restore"
)

// Progress is a report on a long table job, for Options.Progress: how far a phase of an
// archive-table or a restore-table job has come. Every phase of every job reports in
// this one shape, from a first report (Entities 0) to a last one (Done).
type Progress struct {
	// Job is the kind of job: KindArchiveTable or KindRestoreTable.
	Job string
	// Phase is what the job is doing: PhaseExport, PhaseVerify, PhaseDelete or
	// PhaseRestore.
	Phase string
	// Table is the table exported, or the table restored into.
	Table string
	// Generation is the generation being written (export) or read (restore).
	Generation string
	// Entities is how many entities this phase has handled so far.
	Entities int64
	// Total is how many entities the phase handles when that is known (see the
	// phases), else 0.
	Total int64
	// Started is when this phase began.
	Started time.Time
	// Done is true on the last report of the phase. A job that fails reports no Done
	// for the phase it fails in.
	Done bool
}

// progress reports one phase of one job to Options.Progress or, without it, logs it
// every Options.ProgressEvery entities. It is safe for concurrent use: the restore
// verifies its generations at once.
type progress struct {
	fn     func(Progress)
	logger *zap.Logger
	every  int64

	mu     sync.Mutex
	p      Progress
	logged int64 // Entities at the last log entry
}

// startProgress begins the reports of a phase of a job on table's generation gen, and
// reports its start; total is 0 when unknown.
func (a *Archiver) startProgress(job, phase, table, gen string, total int64) *progress {
	pr := &progress{fn: a.opts.Progress, logger: a.opts.Logger, every: int64(a.opts.ProgressEvery),
		p: Progress{Job: job, Phase: phase, Table: table, Generation: gen, Total: total, Started: time.Now()}}
	pr.report(0, false)
	return pr
}

// report says that n entities are done, and whether that is all of them.
func (p *progress) report(n int64, done bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.emit(n, done)
}

// emit reports n entities with p.mu held.
func (p *progress) emit(n int64, done bool) {
	p.p.Entities, p.p.Done = n, done
	if p.fn != nil {
		p.fn(p.p)
		return
	}
	if n/p.every > p.logged/p.every {
		p.logged = n
		p.logger.Info("progress", zap.String("job", p.p.Job), zap.String("phase", p.p.Phase), zap.String("table", p.p.Table),
			zap.String("generation", p.p.Generation), zap.Int64("entities", n), zap.Int64("total", p.p.Total))
	}
}

// add says that n more entities are done.
func (p *progress) add(n int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.emit(p.p.Entities+n, false)
}

// finish reports the phase done.
func (p *progress) finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.emit(p.p.Entities, true)
}

// startPhase is startProgress for a phase whose entities are counted by the data reads
// and table scans under the returned context.
func (a *Archiver) startPhase(ctx context.Context, job, phase, table, gen string, total int64) (context.Context, *progress) {
	pr := a.startProgress(job, phase, table, gen, total)
	return withProgress(ctx, pr), pr
}

type progressKey struct{}

// withProgress returns ctx carrying the phase pr, whose entities the data reads and table
// scans under ctx count (progressIn).
func withProgress(ctx context.Context, pr *progress) context.Context {
	return context.WithValue(ctx, progressKey{}, pr)
}

// progressIn returns the phase ctx carries, or nil (whose methods do nothing).
func progressIn(ctx context.Context) *progress {
	pr, _ := ctx.Value(progressKey{}).(*progress)
	return pr
}
