package migrate

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// A range job takes its page's entities through the copy rule together, a chunk at a
// time, so that the rule's reads are a few range queries and its writes a few entity
// group transactions (grouped.go) rather than a request per entity. The rule's order
// holds for every entity of the chunk: all of its copies are read before any of its old
// entities, every write comes after both, and the confirming re-read after every write.
// Whatever the chunk's shared steps cannot settle (a refused transaction, a confirming
// read that finds the old entity changed or gone) goes through the per-entity rule
// (converge, finish) from fresh reads.
//
// The page scan is itself a read of the old entity, made before the copy is read. It
// cannot serve as the rule's "then the old entity" read (a newer copy read after an
// older scan would be replaced by the older version), but it can settle an entity that
// needs no write: when the copy read after the scan records exactly the version the scan
// saw, the copy is current as of the scan, and nothing is written. A write of the old
// entity after the scan comes from a writer that runs the rule itself after its write
// (or, stopped before it, left an unacknowledged write that the next pass reading the
// old layout again copies: Advance's own pass of the job, verify, clean-up); that is the
// window every read of the job already has, at the scan rather than at a point read.
// Once CleanUp has settled no process writes the old layout, so there the scanned
// version is the current one. That argument holds only for a scan taken under the job's
// stage, settled: a scan that began earlier (the chunk's view waits for the stage to
// settle, the scan does not) settles nothing (scan_view.go).

// chunkSize bounds the entities that share one stage view and one deadline
// (WriteTimeout): what a range job does under a stage's rules must end by its deadline.
// It is also the largest entity group transaction.
const chunkSize = 100

// item is one entity of a chunk: its old keys, the version the page scan saw (source
// phase, a scan taken under the job's settled stage; empty otherwise), its copy and old
// entity as read, and what is left to do.
type item struct {
	pk, rk  string
	npk     string // the copy's PartitionKey
	scanned string
	c, s    version
	read    bool // s was read after c
	wrote   bool
	again   bool // the per-entity rule runs it from fresh reads
}

// runPage runs a page's rows of job, chunk by chunk, each under one stage view; up to
// half of Options.Concurrency chunks at once (each sends up to Concurrency requests at
// once), since a chunk's steps wait on each other.
func (m *Migration[O, N]) runPage(ctx context.Context, job Job, rows []codec.Entity, scanAt time.Time, rep *Report) error {
	var chunks [][]codec.Entity
	var parts []string
	for c := range slices.Chunk(rows, chunkSize) {
		chunks, parts = append(chunks, c), append(parts, c[0].PartitionKey)
	}
	if len(chunks) == 0 {
		return nil
	}
	var mu sync.Mutex
	conc := max(1, m.opts.Concurrency/2)
	return retry.Schedule(ctx, parts, &retry.ScheduleOptions{Concurrency: conc, PartitionConcurrency: conc}, func(ctx context.Context, i int) error {
		var r Report
		err := m.runChunk(ctx, job, chunks[i], scanAt, &r)
		mu.Lock()
		rep.add(r)
		mu.Unlock()
		return err
	})
}

// runChunk takes a chunk through its shared steps under one stage view, then each entity
// they could not settle through the per-entity rule (converge, or clean-up's finish)
// under a view and a deadline of its own, as any single operation.
func (m *Migration[O, N]) runChunk(ctx context.Context, job Job, rows []codec.Entity, scanAt time.Time, rep *Report) error {
	items, err := m.chunkSteps(ctx, job, rows, scanAt, rep)
	if err != nil {
		return err
	}
	var todo []*item
	for i := range items {
		if items[i].again {
			todo = append(todo, &items[i])
		}
	}
	err = schedule(ctx, m.opts.Concurrency, todo, func(ctx context.Context, it *item) error {
		stage, ctx, cancel, err := m.enter(ctx)
		defer cancel()
		if err != nil || stage != jobStage[job.Kind] {
			return wrongStage(err, job.Kind, stage)
		}
		if job.Kind == KindCleanUp {
			return m.finish(ctx, it.pk, it.rk)
		}
		wrote, err := m.converge(ctx, it.pk, it.rk, false)
		it.wrote = it.wrote || wrote
		return err
	})
	if job.Kind == KindBackfill {
		for i := range items {
			rep.copied(items[i].wrote)
		}
	}
	return err
}

// chunkSteps runs a chunk's shared steps under one stage view; scanAt is when its page
// scan began (scan_view.go: the scan settles an entity only when taken under the job's
// settled stage).
func (m *Migration[O, N]) chunkSteps(parent context.Context, job Job, rows []codec.Entity, scanAt time.Time, rep *Report) ([]item, error) {
	stage, ctx, cancel, err := m.enter(parent)
	defer cancel()
	if err != nil || stage != jobStage[job.Kind] {
		return nil, wrongStage(err, job.Kind, stage)
	}
	settledScan := m.scanSettled(ctx, stage, scanAt)
	items := make([]item, 0, len(rows))
	for i := range rows {
		row := &rows[i]
		rep.Scanned++
		if job.Phase == phaseSource {
			m.seams.afterScan(ctx, row.PartitionKey, row.RowKey)
			it := item{pk: row.PartitionKey, rk: row.RowKey}
			if settledScan {
				it.scanned = row.ETag
			}
			items = append(items, it)
			continue
		}
		pk, rk, ok := m.sourceOf(row)
		if !ok {
			rep.foreign(row.PartitionKey, row.RowKey)
			continue
		}
		it := item{pk: pk, rk: rk, npk: row.PartitionKey, c: version{found: true, etag: row.ETag, e: row}}
		if err := m.copyMeta(&it.c, pk, rk); err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	cleaning := job.Kind == KindCleanUp
	var note func(*item)
	if job.Kind == KindVerify {
		note = func(it *item) { classified(job.Phase, it, rep) }
	}
	err = m.convergeChunk(ctx, items, job.Phase, cleaning, note)
	if err == nil && cleaning {
		err = m.finishChunk(ctx, items)
	}
	if err != nil && ctx.Err() != nil && parent.Err() == nil {
		// The chunk's deadline passed (a loaded store): its entities go through the
		// per-entity rule, each under a deadline of its own, from fresh reads.
		m.seams.lateChunk()
		for i := range items {
			items[i].again = true
		}
		return items, nil
	}
	return items, err
}

// convergeChunk is the copy rule (converge) for a chunk's entities at once: their copies
// read (unless the scan of the copies read them), THEN their old entities, the copies
// written, THEN the old entities read again. note, when set, sees each entity's first
// reads (verify counts from them).
func (m *Migration[O, N]) convergeChunk(ctx context.Context, items []item, phase int, cleaning bool, note func(*item)) error {
	if phase == phaseSource {
		if err := m.readCopies(ctx, items); err != nil {
			return err
		}
	}
	var rest []*item
	for i := range items {
		it := &items[i]
		switch {
		case it.c.detached && !cleaning:
			return forgedDetached(it.pk, it.rk)
		case it.c.detached && phase == phaseSource:
			// Standing alone (only clean-up detaches); finishChunk deletes the old entity.
		case it.c.found && it.scanned != "" && it.c.srcETag == it.scanned:
			// Current as of the scan (see above): nothing to write.
		default:
			rest = append(rest, it)
		}
	}
	if err := m.readOlds(ctx, rest, true); err != nil {
		return err
	}
	var writes []*item
	for _, it := range rest {
		it.read = true
		if note != nil {
			note(it)
		}
		c, s := it.c, it.s
		if c.detached || !s.found && !c.found || c.found && s.found && c.srcETag == s.etag {
			continue
		}
		writes = append(writes, it)
	}
	if err := m.writeCopies(ctx, writes); err != nil {
		return err
	}
	var written []*item
	for _, it := range writes {
		if it.wrote {
			m.seams.afterCopyWrite(ctx, it.pk, it.rk)
			written = append(written, it)
		}
	}
	before := make([]version, len(written))
	for i, it := range written {
		before[i] = it.s
	}
	if err := m.readOlds(ctx, written, false); err != nil {
		return err
	}
	for i, it := range written {
		if it.s.found != before[i].found || it.s.etag != before[i].etag {
			it.again = true
		}
	}
	return nil
}

// finishChunk is clean-up's finish for a chunk's entities once convergeChunk made their
// copies current: each current copy detached (If-Match the copy read), then the old
// entity deleted If-Match the version the copy records (deleteOlds). An entity whose copy
// was written, or whose step conflicts, is finished by the per-entity rule.
func (m *Migration[O, N]) finishChunk(ctx context.Context, items []item) error {
	var detach, del []*item
	for i := range items {
		it := &items[i]
		c := it.c
		switch {
		case it.again || it.wrote:
			it.again = true
		case c.detached && it.read && !it.s.found:
			// A detached copy whose old entity is gone: finished already.
		case c.detached:
			del = append(del, it)
		case c.found && c.srcETag == it.scanned, c.found && it.read && it.s.found && c.srcETag == it.s.etag:
			detach = append(detach, it)
		case !c.found && it.read && !it.s.found:
			// Neither exists.
		default:
			it.again = true
		}
	}
	detached, err := m.detachAll(ctx, detach)
	if err == nil {
		err = m.holdTransforms(ctx, append(del, detached...))
	}
	if err == nil {
		err = m.deleteOlds(ctx, append(del, detached...))
	}
	if err != nil {
		return err
	}
	return nil
}

// schedule runs fn on items through retry.Schedule, as each does for a page's rows.
func schedule(ctx context.Context, conc int, items []*item, fn func(context.Context, *item) error) error {
	if len(items) == 0 {
		return nil
	}
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = it.pk
	}
	return retry.Schedule(ctx, parts, &retry.ScheduleOptions{Concurrency: conc, PartitionConcurrency: max(1, conc/2)}, func(ctx context.Context, i int) error {
		return fn(ctx, items[i])
	})
}

// classified is verify's count of one entity from its first reads: from the old layout
// a missing or stale copy, from the new layout an orphan (its old entity gone).
func classified(phase int, it *item, rep *Report) {
	c, s := it.c, it.s
	switch {
	case phase == phaseSource && s.found && !c.found:
		rep.note(it.pk, it.rk, func(c *Counts) { c.Missing++ })
	case phase == phaseSource && s.found && !c.detached && c.srcETag != s.etag:
		rep.note(it.pk, it.rk, func(c *Counts) { c.Stale++ })
	case phase == phaseTarget && c.found && !s.found && !c.detached:
		rep.note(c.e.PartitionKey, c.e.RowKey, func(c *Counts) { c.Orphans++ })
	}
}

// deleteOldOne is finish's last step for one entity whose detached copy records etag; a
// precondition failure goes to the per-entity rule, which refuses a detached copy of a
// version the old entity does not hold. The entity already gone (deleteOld: done) was
// deleted behind a detached copy of that version, by a finisher (this one, its response
// lost, included): the chunk detached the copy only on reads, or a scan, taken under
// CleanUp's settled rules, under which no process deletes an old entity otherwise.
func (m *Migration[O, N]) deleteOldOne(ctx context.Context, it *item) error {
	err := m.deleteOld(ctx, it.pk, it.rk, it.c.srcETag)
	if errors.Is(err, repo.ErrPreconditionFailed) || err != nil && conflict(err) {
		it.again = true
		return nil
	}
	return err
}
