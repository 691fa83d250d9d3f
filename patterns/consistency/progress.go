package consistency

import "time"

// Progress is a report on a long table job, for Options.Progress: how far the export of
// an archive-table job, or the restore of one generation by a restore-table job, has come.
type Progress struct {
	// Job is the kind of job: KindArchiveTable or KindRestoreTable.
	Job string
	// Table is the table exported, or the table restored into.
	Table string
	// Generation is the generation being written (export) or read (restore).
	Generation string
	// Entities is how many entities of this generation were exported or restored so far.
	Entities int64
	// Total is how many entities the generation holds when that is known (a restore: the
	// manifest's count), else 0.
	Total int64
	// Started is when this export or this generation's restore began.
	Started time.Time
	// Done is true on the last report of the export or restore, when every entity was
	// read and written; an archive-table job then still verifies the export (and deletes
	// the table). A job that fails reports no Done.
	Done bool
}

// progress reports one export or one restored generation to Options.Progress.
type progress struct {
	fn func(Progress)
	p  Progress
}

// startProgress begins the reports of a job on table's generation gen; total is 0 when
// unknown.
func (a *Archiver) startProgress(job, table, gen string, total int64) *progress {
	return &progress{fn: a.opts.Progress, p: Progress{Job: job, Table: table, Generation: gen, Total: total, Started: time.Now()}}
}

// report says that n entities are done, and whether that is all of them.
func (p *progress) report(n int64, done bool) {
	if p.fn == nil {
		return
	}
	p.p.Entities, p.p.Done = n, done
	p.fn(p.p)
}
