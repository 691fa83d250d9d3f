package consistency

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/patterns/internal/archive"
	"github.com/tablepatterns/tablepatterns/patterns/internal/rangejob"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
	"go.uber.org/zap"
)

// rangeBatchSize is the most source entities one batch of a range move takes: their
// deletes (with their companions' actions) commit in entity group transactions of up to
// repo.MaxTransactionActions actions, and so do their copies in a target table.
const rangeBatchSize = repo.MaxTransactionActions

// rangeConcurrency is how many batches of one page move at once (at most
// retry.ScheduleOptions' default PartitionConcurrency of them in one partition).
const rangeConcurrency = 8

// blobConcurrency is how many blob reads or writes of one batch run at once.
const blobConcurrency = 16

// fitsTransaction reports whether a transaction of count actions measuring size
// (repo.TransactionSize) stays one that Submit accepts with addCount more actions whose
// repo.Action.Size add up to addSize: at most repo.MaxTransactionActions actions, a
// payload under repo.MaxTransactionBytes.
func fitsTransaction(count, size, addCount, addSize int) bool {
	return count+addCount <= repo.MaxTransactionActions && size+addSize < repo.MaxTransactionBytes
}

// skipped collects the entities of a page that the target cannot take (keys), and
// those written during their move (written), once each.
type skipped struct {
	mu      sync.Mutex
	keys    map[RangeKey]bool
	written map[RangeKey]bool
	log     *zap.Logger
}

// add records that e is left in the source because its copy was refused (err).
func (s *skipped) add(source string, k RangeKey, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys[k] {
		return
	}
	s.keys[k] = true
	s.log.Warn("archive range: entity left in the source, the target cannot take it or the job cannot address it",
		zap.String("table", source), zap.String("partitionKey", k.PartitionKey), zap.String("rowKey", k.RowKey), errs.LogField(err))
}

// list returns the keys in the service's order.
func (s *skipped) list() []RangeKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedKeys(s.keys)
}

// sortedKeys returns the keys of set in the service's order.
func sortedKeys(set map[RangeKey]bool) []RangeKey {
	var out []RangeKey
	for k := range set {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b RangeKey) int {
		return cmp.Or(keys.Compare(a.PartitionKey, b.PartitionKey), keys.Compare(a.RowKey, b.RowKey))
	})
	return out
}

// copyWrite is the archive copy of one source entity of a batch, encoded once: when the
// batch checks that the target can take it, and sent as encoded. A table target's copy is
// the transaction action that inserts it, or replaces the copy read If-Match; a blob
// target's is the blob's body.
type copyWrite struct {
	e    *codec.Entity
	act  repo.Action // table target
	body []byte      // blob target
}

// encodeCopy encodes e's archive copy for the target state st: for a table target (dst)
// as the action that writes it, checked as Submit checks it (repo.CheckTransaction),
// otherwise as a blob's body. An ErrInvalidInput is the target refusing the copy (too
// many properties with the copy's own, too large): the entity is left in the source.
func encodeCopy(source string, dst *repo.Table[codec.Entity], e *codec.Entity, st copyState) (copyWrite, error) {
	if dst == nil {
		body, err := codec.EncodeEntity(archiveCopy(e, source, false))
		return copyWrite{e: e, body: body}, err
	}
	cp := archiveCopy(e, source, true)
	w := copyWrite{e: e}
	if st.exists {
		cp.ETag = st.etag
		w.act = dst.UpdateAction(cp, nil) // replace If-Match the copy's ETag
	} else {
		w.act = dst.InsertAction(cp)
	}
	return w, repo.CheckTransaction(w.act)
}

// rangePageSize is how many keys a delivery scans: RangeJobSize, or a test's page size.
func (a *Archiver) rangePageSize() int {
	return cmp.Or(a.seams.pageSize, RangeJobSize)
}

// rangeBatch is a run of keys of one partition, in RowKey order.
type rangeBatch struct {
	pk  string
	rks []string
}

// archiveRangePage runs one page of a range job (compiled by planRange): it scans up to
// RangeJobSize keys after the checkpoint and moves them in batches.
func (a *Archiver) archiveRangePage(ctx context.Context, p *rangePlan) (RangeReport, error) {
	job := p.job
	// The companions' transaction actions name the table as Options.Companions spells it,
	// and the deletes must share their transactions.
	src, err := a.table(a.companionSpelling(job.Source))
	if err != nil {
		return RangeReport{}, err
	}
	f, err := p.Scan((*rangejob.Key)(job.After))
	if err != nil {
		return RangeReport{}, err
	}
	found, err := src.Collect(ctx, repo.Query{Filter: f, Select: p.Select(), Top: a.rangePageSize()})
	if archive.IsTableNotFound(err) {
		return RangeReport{}, fmt.Errorf("table %s: %w", job.Source, ErrNothingToArchive)
	}
	if err != nil {
		return RangeReport{}, err
	}
	skip := &skipped{keys: map[RangeKey]bool{}, log: a.opts.Logger}
	batches, err := p.batches(found, skip)
	if err != nil {
		return RangeReport{}, err
	}
	warnings, err := a.checkConditions(ctx, src, p, found)
	if err != nil {
		return RangeReport{}, err
	}
	rep := RangeReport{Scanned: len(skip.keys), Warnings: warnings} // Skipped is listed once the batches ran
	for _, b := range batches {
		rep.Scanned += len(b.rks)
	}
	if err := a.after(KindArchiveRange, "scanned"); err != nil {
		rep.Skipped = skip.list()
		return rep, err
	}
	var moved atomic.Int64
	// The page's batches spread over its partitions (retry.Schedule): a hot partition runs
	// at most two at once and slows only itself.
	parts := make([]string, len(batches))
	for i, b := range batches {
		parts[i] = b.pk
	}
	err = retry.Schedule(ctx, parts, &retry.ScheduleOptions{Concurrency: rangeConcurrency}, func(ctx context.Context, i int) error {
		return a.moveBatch(ctx, src, p, batches[i], &moved, skip)
	})
	rep.Moved = int(moved.Load())
	rep.Skipped = skip.list()
	rep.Changed = skip.changedList()
	if err != nil {
		return rep, err
	}
	if len(found) == a.rangePageSize() {
		last := found[len(found)-1]
		rep.Next = &RangeKey{PartitionKey: last.PartitionKey, RowKey: last.RowKey}
	}
	return rep, nil
}

// batches checks the keys of a scan and splits the entities that match the job's
// conditions (re-checked: Matches) into batches. The keys come from storage: each must
// be a position inside the job's range (CheckPosition), after the checkpoint and after
// the key before it in the service's order (keys.Compare), so that a continuation always
// moves forward and never leaves the range. A matching key that the job cannot address
// (rangejob.Addressable) goes to skip, and the rest moves.
func (p *rangePlan) batches(found []codec.Entity, skip *skipped) ([]rangeBatch, error) {
	j := p.job
	var out []rangeBatch
	prev := j.After
	for i := range found {
		k := RangeKey{PartitionKey: found[i].PartitionKey, RowKey: found[i].RowKey}
		if err := p.CheckPosition("scanned key", rangejob.Key(k)); err != nil {
			return nil, fmt.Errorf("consistency: the range scan of %s returned a key outside the range: %w", j.Source, err)
		}
		if prev != nil && cmp.Or(keys.Compare(k.PartitionKey, prev.PartitionKey), keys.Compare(k.RowKey, prev.RowKey)) <= 0 {
			return nil, fmt.Errorf("consistency: the range scan of %s returned keys out of order", j.Source)
		}
		prev = &k
		if !p.Matches(&found[i]) {
			continue // the query matched what the conditions do not (another EDM type)
		}
		if err := rangejob.Addressable(rangejob.Key(k)); err != nil {
			skip.add(j.Source, k, err)
			continue
		}
		if n := len(out); n == 0 || out[n-1].pk != k.PartitionKey || len(out[n-1].rks) == rangeBatchSize {
			out = append(out, rangeBatch{pk: k.PartitionKey})
		}
		out[len(out)-1].rks = append(out[len(out)-1].rks, k.RowKey)
	}
	return out, nil
}

// moveBatch moves a batch, starting over from fresh reads when the source or the target
// changed under it (as ArchiveEntity does); moved counts the entities it deleted. An
// entity written between its copy and its delete leaves its transaction, the rest of
// the batch moves, and the next pass takes it alone; when the passes run out with
// only such entities left, they stay in the source (leaveChanged).
//
// A key whose blob name is too long (a blob target) has no copy to read or write: it is
// left in the source and reported (skip) here, once, before anything of the batch is
// read or written; the attempts see only the other keys.
func (a *Archiver) moveBatch(ctx context.Context, src *repo.Table[codec.Entity], p *rangePlan, b rangeBatch, moved *atomic.Int64, skip *skipped) error {
	job := p.job
	if job.TargetContainer != "" {
		var rks []string
		for _, rk := range b.rks {
			if err := checkBlobName(job.Source, b.pk, rk); err != nil {
				skip.add(job.Source, RangeKey{b.pk, rk}, err)
				continue
			}
			rks = append(rks, rk)
		}
		if len(rks) == 0 {
			return nil
		}
		b.rks = rks
	}
	op := retry.Op{Name: "archive range batch", Resource: job.Source, PartitionKey: b.pk, RowKey: b.rks[0], Retryable: restartable}
	var refused copyRefusals
	var lost uncertainDeletes
	narrowed := false // b.rks holds only entities written between their copy and their delete
	err := retry.Do(ctx, a.opts.Retry, op, func(ctx context.Context, _ int) error {
		n, changed, err := a.moveBatchOnce(ctx, src, p, b, skip, &lost)
		moved.Add(int64(n + lost.take()))
		if err == nil && len(changed) > 0 {
			b.rks, narrowed = changed, true // the rest moved: a later pass reads and moves these again
			return errChangedDuringMove
		}
		if rk, twice := refused.twice(err); twice {
			// The store cannot delete that entity's companion copy: leave the entity.
			skip.add(job.Source, RangeKey{b.pk, rk}, errs.Invalid("companions", "the store refuses the delete of a companion's copy in an entity group transaction (twice) while the companion finds it there"))
			if b.rks = slices.DeleteFunc(slices.Clone(b.rks), func(x string) bool { return x == rk }); len(b.rks) == 0 {
				return nil
			}
		}
		return err
	})
	return leaveChanged(job.Source, b, narrowed, err, skip)
}

// moveBatchOnce is one attempt at a batch, the steps of ArchiveEntity for many entities:
//
//  1. read the target's copies of the batch's keys (their ETags and the source versions
//     they record), THEN the source entities of the batch (one query): a source entity
//     whose version differs from the one its copy records holds a newer version;
//  2. write the copies that do not record the source's version: insert where the target
//     had none, replace If-Match the copy's ETag otherwise (table targets: in entity group
//     transactions);
//  3. delete the source entities If-Match the ETags read in 1, with their companions'
//     actions, in entity group transactions, each under its entities' companion protocol
//     (withCompanions: Before hooks and the transaction within the shortest Within, then
//     After hooks).
//
// Each copy is encoded once, after the reads of 1, and a copy the target refuses leaves
// its entity in the source (skip). The companions are asked after the reads of 1 and
// before 2 (a refusal, or actions that cannot share a transaction with the delete, leave
// nothing written).
//
// Any conflict fails the attempt (errRestart, 412, 409, an unknown outcome): the next
// attempt reads again. Entities whose delete committed are no longer in the source, so
// a new attempt moves only what is left.
func (a *Archiver) moveBatchOnce(ctx context.Context, src *repo.Table[codec.Entity], p *rangePlan, b rangeBatch, skip *skipped, lost *uncertainDeletes) (int, []string, error) {
	job := p.job
	want := make(map[string]bool, len(b.rks))
	for _, rk := range b.rks {
		want[rk] = true
	}
	var dst *repo.Table[codec.Entity] // nil: a blob target
	if job.TargetTable != "" {
		var err error
		if dst, err = a.table(job.TargetTable); err != nil {
			return 0, nil, err
		}
	}
	tgt, err := a.rangeTargets(ctx, job, dst, b, want)
	if err != nil {
		return 0, nil, err
	}
	lo, hi := b.rks[0], b.rks[len(b.rks)-1]
	f := filter.And(p.Filter(), filter.PartitionKey(b.pk), filter.Ge("RowKey", lo), filter.Le("RowKey", hi))
	read, err := src.Collect(ctx, repo.Query{Filter: f})
	if err != nil {
		return 0, nil, err
	}
	// Keep the batch's own keys: an entity inserted behind the scan is left for a later
	// run, and the query's answer is untrusted.
	var live []*codec.Entity
	var stale []copyWrite // the copies that do not record their source's version
	for i := range read {
		e := &read[i]
		if e.PartitionKey != b.pk || !want[e.RowKey] {
			continue
		}
		if e.ETag == "" {
			return 0, nil, fmt.Errorf("consistency: a source entity of %s came back without an ETag", job.Source)
		}
		want[e.RowKey] = false // a key read twice is moved once
		if !p.Matches(e) {
			continue // no longer selected (or never, in the conditions' types)
		}
		st := tgt[e.RowKey]
		w, err := encodeCopy(job.Source, dst, e, st)
		if errors.Is(err, errs.ErrInvalidInput) {
			// The target cannot take this one entity: leave it, report it, move the rest.
			skip.add(job.Source, RangeKey{e.PartitionKey, e.RowKey}, err)
			continue
		}
		if err != nil {
			return 0, nil, err
		}
		live = append(live, e)
		if st.sourceETag != e.ETag {
			stale = append(stale, w)
		}
	}
	lost.settle(want, tgt) // what an earlier attempt's lost delete response moved
	if len(live) == 0 {
		return 0, nil, nil
	}
	for _, e := range live {
		if st := tgt[e.RowKey]; st.foreign(job.Source) {
			// Another table's entity under the same keys: never replaced (nothing written).
			return 0, nil, foreignCopy(job.TargetTable, job.Source, e.PartitionKey, e.RowKey, st.sourceTable)
		}
	}
	if err := a.after(KindArchiveRange, "read"); err != nil {
		return 0, nil, err
	}
	groups, err := a.removalGroups(ctx, src, job, live)
	if err != nil {
		return 0, nil, err
	}
	if err := a.writeCopies(ctx, job, dst, stale, tgt); err != nil {
		return 0, nil, err
	}
	if err := a.after(KindArchiveRange, "copied"); err != nil {
		return 0, nil, err
	}
	n, changed, err := a.deleteMoved(ctx, src, job, groups, skip, lost)
	if err != nil {
		return n, nil, err
	}
	return n, changed, a.after(KindArchiveRange, "deleted")
}

// rangeTargets reads the target's state for the keys of a batch: the copies in the
// target table dst, or (dst nil) the blobs of the target container.
func (a *Archiver) rangeTargets(ctx context.Context, job ArchiveRangeJob, dst *repo.Table[codec.Entity], b rangeBatch, want map[string]bool) (map[string]copyState, error) {
	out := make(map[string]copyState, len(b.rks))
	if dst != nil {
		got, err := a.readCopies(ctx, dst, b)
		if archive.IsTableNotFound(err) {
			return out, nil // created by the first copy
		}
		if err != nil {
			return nil, err
		}
		for i := range got {
			e := &got[i]
			if e.PartitionKey != b.pk || !want[e.RowKey] {
				continue
			}
			st, err := tableCopyState(job.TargetTable, e)
			if err != nil {
				return nil, err
			}
			out[e.RowKey] = st
		}
		return out, nil
	}
	var mu sync.Mutex
	err := fanout.Do(ctx, len(b.rks), blobConcurrency, func(ctx context.Context, i int) error {
		// The blob name was checked when the batch started (moveBatch).
		one := ArchiveEntityJob{Source: job.Source, PartitionKey: b.pk, RowKey: b.rks[i], TargetContainer: job.TargetContainer}
		st, err := a.blobState(ctx, one, EntityBlobName(job.Source, b.pk, b.rks[i]))
		mu.Lock()
		out[b.rks[i]] = st
		mu.Unlock()
		return err
	})
	return out, err
}

// readCopies reads the target's copies of a batch's keys: one query of the batch's key
// range (one page), then point reads of the keys past what that page covered. A target
// partition that already holds other copies between the batch's keys (earlier archives)
// costs at most one page and one point read per key, never a scan of those copies.
func (a *Archiver) readCopies(ctx context.Context, dst *repo.Table[codec.Entity], b rangeBatch) ([]codec.Entity, error) {
	lo, hi := b.rks[0], b.rks[len(b.rks)-1]
	f := filter.And(filter.PartitionKey(b.pk), filter.Ge("RowKey", lo), filter.Le("RowKey", hi))
	// Whole copies: the hop a copy records is the highest of its provenance names, which
	// a $select cannot name in advance (see provenanceHop).
	pager := dst.Pages(repo.Query{Filter: f})
	page, err := pager.Next(ctx)
	if err != nil {
		return nil, err
	}
	got := page.Items
	if !pager.More() {
		return got, nil
	}
	// The page ended before hi: it settles the keys up to its last row.
	var rest [][2]string
	for _, rk := range b.rks {
		if n := len(page.Items); n > 0 && keys.Compare(rk, page.Items[n-1].RowKey) <= 0 {
			continue
		}
		rest = append(rest, [2]string{b.pk, rk})
	}
	more, found, err := dst.GetMany(ctx, rest)
	if err != nil {
		return nil, err
	}
	for i := range more {
		if found[i] {
			got = append(got, more[i])
		}
	}
	return got, nil
}

// writeCopies writes the archive copies of the entities whose copy does not record
// their version (stale, encoded by encodeCopy), conditionally on the target state read
// before the source: to the target table dst in entity group transactions, or (dst nil)
// to blobs.
func (a *Archiver) writeCopies(ctx context.Context, job ArchiveRangeJob, dst *repo.Table[codec.Entity], stale []copyWrite, tgt map[string]copyState) error {
	if len(stale) == 0 {
		return nil
	}
	if dst == nil {
		return fanout.Do(ctx, len(stale), blobConcurrency, func(ctx context.Context, i int) error {
			w := stale[i]
			one := ArchiveEntityJob{Source: job.Source, PartitionKey: w.e.PartitionKey, RowKey: w.e.RowKey, TargetContainer: job.TargetContainer}
			return a.uploadCopy(ctx, one, w.e, w.body, tgt[w.e.RowKey])
		})
	}
	var txs [][]repo.Action
	var cur []repo.Action
	size := repo.TransactionSize()
	for _, w := range stale {
		n := w.act.Size()
		if len(cur) > 0 && !fitsTransaction(len(cur), size, 1, n) {
			txs, cur, size = append(txs, cur), nil, repo.TransactionSize()
		}
		cur = append(cur, w.act)
		size += n
	}
	txs = append(txs, cur)
	created := false
	for _, tx := range txs {
		_, err := repo.Submit(ctx, tx...)
		if archive.IsTableNotFound(err) && !created {
			if err = dst.CreateIfNotExists(ctx); err == nil {
				created = true
				_, err = repo.Submit(ctx, tx...)
			}
		}
		if errors.Is(err, errs.ErrNotFound) {
			return errRestart // a copy we meant to replace is gone
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// removalGroup is the delete of one entity with its companions' actions (they commit in
// one transaction), their removals, and the rows the actions address.
type removalGroup struct {
	e       *codec.Entity
	actions []repo.Action
	size    int // the actions' repo.Action.Size
	rows    []string
	removing
}

// removalGroup asks the companions of the source what removing e means, and checks that
// e's delete and its companions' actions fit one transaction (checkRemoval, as the
// single move does: count, one table as spelled, e's partition, one action per row,
// size).
func (a *Archiver) removalGroup(ctx context.Context, src *repo.Table[codec.Entity], job ArchiveRangeJob, e *codec.Entity) (removalGroup, error) {
	rs, err := a.removals(ctx, job.Source, e)
	if err != nil {
		return removalGroup{}, err
	}
	del := src.DeleteAction(e.PartitionKey, e.RowKey, &repo.DeleteOptions{ETag: e.ETag})
	acts, err := checkRemoval(job.Source, del, e.PartitionKey, e.RowKey, rs)
	if err != nil {
		return removalGroup{}, err
	}
	g := removalGroup{e: e, actions: acts, removing: removing{pk: e.PartitionKey, rk: e.RowKey, rs: rs}}
	for _, act := range g.actions {
		_, rk := act.Keys()
		g.size += act.Size()
		g.rows = append(g.rows, rk)
	}
	return g, nil
}

// removalGroups is removalGroup for every entity of live.
func (a *Archiver) removalGroups(ctx context.Context, src *repo.Table[codec.Entity], job ArchiveRangeJob, live []*codec.Entity) ([]removalGroup, error) {
	out := make([]removalGroup, 0, len(live))
	for _, e := range live {
		g, err := a.removalGroup(ctx, src, job, e)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// deleteMoved deletes the moved entities from the source If-Match the ETags that were
// copied, each in one transaction with its companions' actions, and returns how many it
// deleted. A transaction holds at most repo.MaxTransactionActions actions, and is sent
// under the companion protocol of the entities it deletes (withCompanions).
//
// It works in rounds. Entities of one batch can share a companion row (the index entity
// of a value that several of them hold): each entity's Removal was computed from the row
// as it was, so once one transaction changed the row, the others' actions on it would
// fail If-Match. A group that addresses a row an earlier group of its round addresses
// therefore waits for the next round, where its companions are asked again (they then
// read the row as the round before left it). A waiting group whose earlier rows are
// already taken in the new round waits again without being asked, so an entity that
// waited costs one more companion read (when its turn comes), not a failed transaction
// and a restart of the whole batch.
//
// An entity written since the batch read it (its delete fails If-Match), or deleted by
// another client, leaves its transaction and the others go again (leave): one hot
// entity never holds back the rest of its batch; a later run of the job moves it.
//
// A store can refuse the delete of an entity (404, 412, 400) while the entity is there,
// unchanged (Azurite, for a key with U+2028 or U+2029 in a $batch: it addresses another
// row). One Get tells it from a concurrent change, and such an entity is then removed on
// its own (removeAlone) while the rest of its transaction is sent again, rather than the
// batch restarting until its retries end.
func (a *Archiver) deleteMoved(ctx context.Context, src *repo.Table[codec.Entity], job ArchiveRangeJob, groups []removalGroup, skip *skipped, lost *uncertainDeletes) (deleted int, changed []string, err error) {
	type waiting struct {
		g     removalGroup
		asked bool // g holds the current answer of the companions; else only g.e and g.rows (the last round's)
	}
	pending := make([]waiting, len(groups))
	for i, g := range groups {
		pending[i] = waiting{g: g, asked: true}
	}
	for len(pending) > 0 {
		var cur []removalGroup // the groups of the transaction being built
		size := repo.TransactionSize()
		used := map[string]bool{}
		taken := func(rows []string) bool {
			return slices.ContainsFunc(rows, func(rk string) bool { return used[rk] })
		}
		flush := func() error {
			for len(cur) > 0 {
				n, err := a.deleteGroups(ctx, src, job, cur)
				deleted += n
				lost.sent(cur, err)
				var ce *changedError
				if errors.As(err, &ce) {
					// Nothing of the transaction landed: the entity written (or deleted)
					// since the batch read it leaves, and the others go again.
					if !ce.gone {
						changed = append(changed, cur[ce.group].e.RowKey)
					}
					cur = slices.Delete(cur, ce.group, ce.group+1)
					continue
				}
				var ue *unaddressableError
				if !errors.As(err, &ue) {
					if err != nil {
						return err
					}
					break
				}
				// The store refused the delete of one entity while the entity is there at
				// the version read: nothing of the transaction landed.
				// That entity takes a path of its own and the others go again.
				g := cur[ue.group]
				cur = slices.Delete(cur, ue.group, ue.group+1)
				n, err = a.removeAlone(ctx, src, job, g, ue, skip)
				deleted += n
				if err != nil {
					return err
				}
			}
			cur, size = nil, repo.TransactionSize()
			return nil
		}
		var next []waiting
		for _, w := range pending {
			if taken(w.g.rows) {
				next = append(next, waiting{g: w.g})
				continue
			}
			g := w.g
			if !w.asked {
				var err error
				if g, err = a.removalGroup(ctx, src, job, w.g.e); err != nil {
					return deleted, changed, err
				}
				if taken(g.rows) {
					next = append(next, waiting{g: g})
					continue
				}
			}
			if !fitsTransaction(actionCount(cur), size, len(g.actions), g.size) {
				if err := flush(); err != nil {
					return deleted, changed, err
				}
			}
			cur = append(cur, g)
			size += g.size
			for _, rk := range g.rows {
				used[rk] = true
			}
		}
		if err := flush(); err != nil {
			return deleted, changed, err
		}
		pending = next
	}
	return deleted, changed, nil
}

// actionCount is the number of actions of the groups gs.
func actionCount(gs []removalGroup) int {
	n := 0
	for _, g := range gs {
		n += len(g.actions)
	}
	return n
}

// unaddressableError reports that the store answered the delete of the entity of group
// (an index into the transaction's groups) with err, a 4xx, while the entity is
// there at the version the move read. It wraps nothing: the transaction did not land,
// and the companions' After hooks must not run as after a 404.
type unaddressableError struct {
	group int
	err   error
}

func (e *unaddressableError) Error() string {
	return "consistency: the store refused the delete of an entity that is there, unchanged: " + e.err.Error()
}

// deleteGroups sends the deletes of gs in one entity group transaction under their
// companion protocol (withCompanions) and returns how many entities it deleted. A
// refusal of an entity's own delete (a 4xx: 404, 412, or Azurite's 400
// InvalidDuplicateRow when it read the key of another delete of the transaction) is
// checked with one Get of that entity: gone or changed, a *changedError names its
// group; there at the version read, an *unaddressableError does.
func (a *Archiver) deleteGroups(ctx context.Context, src *repo.Table[codec.Entity], job ArchiveRangeJob, gs []removalGroup) (int, error) {
	tx := make([]repo.Action, 0, actionCount(gs))
	batch := make([]removing, 0, len(gs))
	for _, g := range gs {
		tx = append(tx, g.actions...)
		batch = append(batch, g.removing)
	}
	err := a.withCompanions(ctx, KindArchiveRange, job.Source, batch, func(ctx context.Context) error {
		_, err := repo.Submit(ctx, tx...)
		var ae *repo.ActionError
		if err == nil || errors.Is(err, errs.ErrOutcomeUnknown) || !errors.As(err, &ae) {
			return err
		}
		if gi, own := deleteOf(gs, ae.Index); own && ae.StatusCode >= 400 && ae.StatusCode < 500 {
			e := gs[gi].e
			etag, there, gerr := stillThere(ctx, src, e.PartitionKey, e.RowKey)
			switch {
			case gerr != nil:
				return gerr
			case there && etag == e.ETag:
				return &unaddressableError{group: gi, err: err}
			default:
				return &changedError{group: gi, gone: !there}
			}
		}
		if errors.Is(err, errs.ErrNotFound) || errors.Is(err, errs.ErrDeleteMisaddressed) {
			// A companion's copy is gone: a concurrent run moved its entity, or the
			// application deleted it. Start over: fresh reads find what is left. Or the
			// store misaddressed its delete (any status, the copy there unchanged): the
			// same refusal twice in a row leaves the entity (copyRefusals).
			gi, _ := deleteOf(gs, ae.Index)
			return &rangeCopyGone{action: ae.Index, rk: gs[gi].e.RowKey, version: gs[gi].e.ETag, row: ae.RowKey}
		}
		return err
	})
	if errors.Is(err, errMoveStepFailed) {
		return len(gs), err // committed; a companion's After failed
	}
	if err != nil {
		return 0, err
	}
	return len(gs), nil
}

// deleteOf returns the group of gs whose actions hold the transaction's action index,
// and whether that action is the group's entity delete (its first: checkRemoval).
func deleteOf(gs []removalGroup, index int) (int, bool) {
	at := 0
	for i, g := range gs {
		if index < at+len(g.actions) {
			return i, index == at
		}
		at += len(g.actions)
	}
	return 0, false
}

// removeAlone removes the entity of g, whose delete the store refused in a transaction
// while the entity is there (ue), on a path of its own: a plain delete If-Match the
// version copied when no companion takes part (one request, which the store addresses),
// and returns 1 when it deleted it. An entity with companions cannot leave the
// transaction of their actions and hooks: it is left in the source and reported (skip),
// with its copy in the target beside it (the source stays authoritative).
func (a *Archiver) removeAlone(ctx context.Context, src *repo.Table[codec.Entity], job ArchiveRangeJob, g removalGroup, ue *unaddressableError, skip *skipped) (int, error) {
	k := RangeKey{g.e.PartitionKey, g.e.RowKey}
	if len(g.actions) > 1 || len(g.rs) > 0 {
		skip.add(job.Source, k, errs.Invalid("RowKey", "the store refuses the entity's delete in an entity group transaction (%v), and its companions need one", ue.err))
		return 0, nil
	}
	err := src.Delete(ctx, k.PartitionKey, k.RowKey, &repo.DeleteOptions{ETag: g.e.ETag})
	switch {
	case err == nil:
		return 1, nil
	case errors.Is(err, errs.ErrNotFound) && !archive.IsTableNotFound(err):
		// Gone after all (a concurrent run): start over, fresh reads find what is left.
		return 0, fmt.Errorf("%w: (%q, %q) went while deleted on its own", errRestart, k.PartitionKey, k.RowKey)
	default:
		return 0, err // 412 (changed): start over; others as they are
	}
}
