package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// Progress across workers. Each page a range job completes records, in the control
// table's partition of the state record, one row per range job of the stage's run: the
// furthest checkpoint reached, whether the range is done, and its counts. The row is
// keyed by the migration, the id of the transition that entered the stage (so a re-run
// after an abort, or a later stage, never mixes with this run), the job kind and the
// range (its bounds within its split, hashed). The counts are added only by the write
// that moves the stored checkpoint past where it was, If-Match the row read (insert
// where there is none), from a page that starts at or past it; a page whose checkpoint
// is not past the stored one adds nothing, nor does a page that starts before it (its
// counts hold rows counted already), and a write that meets 412/409 reads again. So two
// deliveries of one page, a lost response, a killed worker's redelivery, deliveries that
// end a page at other keys each count a page once. Progress is advisory: a progress
// write that fails is logged and never fails the page (its counts are then missing from
// the sums), and is sent once, never retried (progress_advisory.go).

// progressRow is a range job's progress, counts and keys only (never values).
type progressRow struct {
	PartitionKey string `table:",pk"`
	RowKey       string `table:",rk"`
	ETag         string `table:",etag"`
	Kind         string
	From, To     string
	// Parts is the number of ranges Jobs split the kind into (0: unknown).
	Parts int64
	// The checkpoint: Phase, and the last key scanned (At false: the phase's start).
	Phase                                             int64
	At                                                bool
	AfterPK, AfterRK                                  string
	Done                                              bool
	Scanned, Copied, Missing, Stale, Orphans, Foreign int64
	Rewritten, Current, Unknown, Downgraded, Refused  int64
}

// progressTables reach the progress rows: typed for the conditional writes, raw for
// Progress, which parses each row on its own so that one that does not parse is
// skipped, not fatal to the read.
type progressTables struct {
	rows *repo.Table[progressRow]
	raw  *repo.Table[codec.Entity]
}

func newProgressTables(svc *aztables.ServiceClient, control string, o *repo.Options) (progressTables, error) {
	rows, err := repo.New[progressRow](svc, control, advisory(o))
	if err != nil {
		return progressTables{}, err
	}
	raw, err := repo.New[codec.Entity](svc, control, o)
	return progressTables{rows: rows, raw: raw}, err
}

// progressRounds bounds the rounds of a progress write that lost to another's.
const progressRounds = 8

// maxProgressCount bounds a stored count: a larger one was not written by a job.
const maxProgressCount = 1 << 48

// progressCounts are a page's counts in the row's order of counts.
type progressCounts [11]int64

// countNames name the counts of KindProgress.Counts, in the row's order.
var countNames = [11]string{"scanned", "copied", "missing", "stale", "orphans", "foreign", "rewritten", "current", "unknown", "downgraded", "refused"}

func (r *progressRow) counts() []*int64 {
	return []*int64{&r.Scanned, &r.Copied, &r.Missing, &r.Stale, &r.Orphans, &r.Foreign, &r.Rewritten, &r.Current, &r.Unknown, &r.Downgraded, &r.Refused}
}

func reportCounts(r Report) progressCounts {
	return progressCounts{0: int64(r.Scanned), 1: int64(r.Copied), 2: int64(r.Missing), 3: int64(r.Stale), 4: int64(r.Orphans), 5: int64(r.Foreign)}
}

func schemaCounts(r SchemaReport) progressCounts {
	return progressCounts{0: int64(r.Scanned), 3: int64(r.Stale), 6: int64(r.Rewritten), 7: int64(r.Current), 8: int64(r.Unknown), 9: int64(r.Downgraded), 10: int64(r.Refused)}
}

// kindStage is the stage whose run a job kind belongs to, a re-keying's or a schema
// migration's.
func kindStage(kind string) (Stage, bool) {
	if s, ok := jobStage[kind]; ok {
		return s, true
	}
	s, ok := schemaJobStage[kind]
	return s, ok
}

// runOf is the id of the transition that entered stage, from the record st: the latest
// write while st is at stage, the one before while stage is the one st came from; ""
// once the stage is further behind (its run is over: nothing to record).
func runOf(st State, stage Stage) string {
	switch {
	case st.Stage == stage && len(st.transitions) > 0:
		return st.transitions[0]
	case st.Previous == stage && len(st.transitions) > 1:
		return st.transitions[1]
	}
	return ""
}

func (m *Migration[O, N]) progressPrefix(run string) string {
	return "progress:" + m.spec.Name + ":" + run + ":"
}

// rangeID names a range job's row: its bounds within the split it belongs to (parts, as
// Jobs made it; 1 for RunAll's one pass). Passes over the same work by another split
// (Advance's RunAll beside the workers' jobs, or Jobs at other bounds) keep rows of
// their own, so that no page of one is taken for a page of the other, and Progress sums
// each pass apart (progress_passes.go).
func rangeID(parts int, from, to string) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%d\x00%s\x00%s", parts, from, to))
	return hex.EncodeToString(h[:16])
}

// checkpoint is a position in a range job: done, or a phase and the last key scanned.
type checkpoint struct {
	done  bool
	phase int64
	after *Key
}

func (c checkpoint) past(o checkpoint) bool {
	switch {
	case c.done || o.done:
		return c.done && !o.done
	case c.phase != o.phase:
		return c.phase > o.phase
	case c.after == nil || o.after == nil:
		return c.after != nil && o.after == nil
	}
	if d := keys.Compare(c.after.PartitionKey, o.after.PartitionKey); d != 0 {
		return d > 0
	}
	return keys.Compare(c.after.RowKey, o.after.RowKey) > 0
}

func (r *progressRow) checkpoint() checkpoint {
	c := checkpoint{done: r.Done, phase: r.Phase}
	if r.At {
		c.after = &Key{PartitionKey: r.AfterPK, RowKey: r.AfterRK}
	}
	return c
}

// recordPage records the progress of a page of job that completed, next the job that
// continues it (nil: the range is done). A failure is logged (counts and kinds only),
// never returned: progress is advisory.
func (m *Migration[O, N]) recordPage(ctx context.Context, job Job, next *Job, c progressCounts) {
	m.seams.beforeProgress(ctx, job)
	if err := m.writeProgress(ctx, job, next, c); err != nil {
		m.opts.Logger.Warn("migrate: progress not recorded (advisory: the page is done)", zap.String("kind", job.Kind),
			zap.Int64("scanned", c[0]), zap.Bool("more", next != nil), zap.String("error", errs.Redact(err)))
	}
}

func (m *Migration[O, N]) writeProgress(ctx context.Context, job Job, next *Job, c progressCounts) error {
	stage, ok := kindStage(job.Kind)
	if !ok {
		return errs.Invalid("Job.Kind", "not a migration job kind")
	}
	st, err := m.state(ctx)
	if err != nil {
		return err
	}
	run := runOf(st, stage)
	if run == "" {
		return nil
	}
	to := checkpoint{done: next == nil, phase: int64(job.Phase)} // done: in the last page's phase, one of its kind
	if next != nil {
		to.phase, to.after = int64(next.Phase), next.After
	}
	from := checkpoint{phase: int64(job.Phase), after: job.After}
	pk, rk := m.recordKey(), m.progressPrefix(run)+job.Kind+":"+rangeID(job.Parts, job.PartitionKeyFrom, job.PartitionKeyTo)
	for round := 1; round <= progressRounds; round++ {
		row, err := m.progress.rows.Get(ctx, pk, rk)
		found := err == nil
		if found {
			err = m.checkProgressRow(&row, run, stage)
		}
		switch {
		case errors.Is(err, repo.ErrNotFound):
			row = progressRow{PartitionKey: pk, RowKey: rk, Kind: job.Kind, From: job.PartitionKeyFrom, To: job.PartitionKeyTo}
			if job.Parts > 0 && job.Parts <= maxParts {
				row.Parts = int64(job.Parts)
			}
		case err != nil:
			return err // includes a stored row that does not validate: never built on
		case !to.past(row.checkpoint()):
			return nil // this page, or one after it, was counted
		case row.checkpoint().past(from):
			// The page began before rows counted already (another delivery paged the
			// range at other keys): its counts cannot be told apart; the delivery that
			// counted them goes on from the stored checkpoint and counts the rest.
			return nil
		}
		row.Done, row.Phase, row.At, row.AfterPK, row.AfterRK = to.done, to.phase, to.after != nil, "", ""
		if to.after != nil {
			row.AfterPK, row.AfterRK = to.after.PartitionKey, to.after.RowKey
		}
		for i, p := range row.counts() {
			*p += c[i]
		}
		if found {
			err = m.progress.rows.Update(ctx, &row, nil)
		} else {
			err = m.progress.rows.Insert(ctx, &row)
		}
		if err == nil || !conflict(err) {
			return err
		}
	}
	return fmt.Errorf("migrate: progress of a %s range: %d rounds lost to other writers: %w", job.Kind, progressRounds, errs.ErrPreconditionFailed)
}

// checkProgressRow validates a progress row read back (untrusted) in the run of stage:
// its kind (one of this migration's jobs at stage), range, checkpoint and counts, and
// its key naming this migration's run, kind and range.
func (m *Migration[O, N]) checkProgressRow(r *progressRow, run string, stage Stage) error {
	bad := func(what string) error { return errs.Invalid("progress row", "%s", what) }
	ok := m.runsKindAt(r.Kind, stage)
	j := Job{Migration: m.spec.Name, Kind: r.Kind, Phase: int(r.Phase), PartitionKeyFrom: r.From, PartitionKeyTo: r.To}
	if r.At {
		j.After = &Key{PartitionKey: r.AfterPK, RowKey: r.AfterRK}
	}
	switch {
	case !ok:
		return bad("Kind is not a kind of this migration's jobs at its stage")
	case r.PartitionKey != m.recordKey() || r.RowKey != m.progressPrefix(run)+r.Kind+":"+rangeID(int(r.Parts), r.From, r.To):
		return bad("its key does not name its run, kind and range")
	case r.Parts < 0 || r.Parts > maxParts:
		return bad("Parts out of range")
	case r.Done && r.At:
		return bad("done with a checkpoint")
	case !r.At && (r.AfterPK != "" || r.AfterRK != ""):
		return bad("a checkpoint key without a checkpoint")
	}
	if p, rekey := phases[r.Kind]; (rekey && r.Phase != int64(p[0]) && r.Phase != int64(p[1])) || (!rekey && r.Phase != phaseSource) {
		return bad("Phase is not a phase of its kind")
	}
	if err := j.selection().Validate(); err != nil {
		return bad("its range or checkpoint does not validate")
	}
	for _, p := range r.counts() {
		if *p < 0 || *p > maxProgressCount {
			return bad("a count out of range")
		}
	}
	return nil
}

// Progress is the summed progress of the range jobs of a migration's current stage, as
// the progress rows of its workers (and Advance's RunAll) recorded it. It is advisory:
// a page whose progress write failed is missing from it.
type Progress struct {
	// Stage is the stage the state record shows; the rows are those of its run.
	Stage Stage
	// Kinds is the progress of each pass of a job kind with a recorded page, by kind:
	// the workers' jobs as Jobs split them (each split apart: Jobs at other bounds is
	// another pass), and apart from them Advance's own pass over the same work (RunAll:
	// Total 1), so that no entity is counted twice in one.
	Kinds []KindProgress
	// Skipped counts the progress rows that did not validate: read, never trusted.
	Skipped int
}

// KindProgress is the progress of one pass of a job kind in a stage's run: the ranges of
// one split of the work.
type KindProgress struct {
	// Kind is the job kind (KindBackfill, KindSchemaRewrite, ...).
	Kind string
	// Started counts the ranges with a recorded page, Done those finished.
	Started, Done int
	// Total is the number of ranges the pass was split into (Jobs; 1 for RunAll); 0 for
	// jobs that did not say.
	Total int
	// Counts sums the ranges' counts by name: "scanned", and the kind's own counts
	// ("copied", "missing", "stale", "orphans", "foreign" for a re-keying's jobs;
	// "rewritten", "current", "unknown", "downgraded", "stale", "refused" for a schema
	// migration's). Counts that no range recorded are absent.
	Counts map[string]int64
}

// Progress reads the progress of the range jobs of the migration's current stage: per
// job kind, the ranges started and done, the total where known, and the summed counts.
// A progress row that does not validate is skipped and counted in Progress.Skipped.
//
// Errors: errs.ErrNotFound (not planned), those of Status (ErrInvalidInput for a state
// record that does not validate, ErrInProgress, ErrTransient, *repo.Error).
func (m *Migration[O, N]) Progress(ctx context.Context) (Progress, error) {
	st, err := m.load(ctx)
	if err != nil || st.Stage == "" {
		return Progress{}, notPlanned(st, err)
	}
	p := Progress{Stage: st.Stage}
	run := runOf(st, st.Stage)
	if run == "" || st.Name != m.spec.Name {
		return p, nil // an ended migration's record, replaced: no run of ours
	}
	rows, err := m.progress.raw.Collect(ctx, repo.Query{Filter: filter.RowKeyPrefix(m.recordKey(), m.progressPrefix(run))})
	if err != nil {
		return Progress{}, tableGone(err)
	}
	var valid []progressRow
	for i := range rows {
		r, err := parseProgressRow(&rows[i])
		if err == nil {
			err = m.checkProgressRow(&r, run, st.Stage)
		}
		if err != nil {
			p.Skipped++
			continue
		}
		valid = append(valid, r)
	}
	var skipped int
	p.Kinds, skipped = passes(valid)
	p.Skipped += skipped
	return p, nil
}

// parseProgressRow reads a row's properties by their types: anything else does not
// parse.
func parseProgressRow(e *codec.Entity) (progressRow, error) {
	r := progressRow{PartitionKey: e.PartitionKey, RowKey: e.RowKey}
	bad := errs.Invalid("progress row", "a property of the wrong type")
	strs := map[string]*string{"Kind": &r.Kind, "From": &r.From, "To": &r.To, "AfterPK": &r.AfterPK, "AfterRK": &r.AfterRK}
	for name, dst := range strs {
		switch v := e.Properties[name].(type) {
		case nil:
		case string:
			*dst = v
		default:
			return r, bad
		}
	}
	bools := map[string]*bool{"At": &r.At, "Done": &r.Done}
	for name, dst := range bools {
		switch v := e.Properties[name].(type) {
		case nil:
		case bool:
			*dst = v
		default:
			return r, bad
		}
	}
	ints := map[string]*int64{"Parts": &r.Parts, "Phase": &r.Phase}
	for i, p := range r.counts() {
		ints[capitalized(countNames[i])] = p
	}
	for name, dst := range ints {
		switch v := e.Properties[name].(type) {
		case nil:
		case int64:
			*dst = v
		case int32:
			*dst = int64(v)
		default:
			return r, bad
		}
	}
	return r, nil
}

func capitalized(s string) string { return string(s[0]-'a'+'A') + s[1:] }

// pageRecorded is the progress of a schema job's page that completed: the re-keying
// jobs' rule and rows, with the schema report's counts.
func (s *Schema[T]) pageRecorded(ctx context.Context, job Job, next *Job, rep SchemaReport) {
	s.opts.Logger.Info("migrate: schema page done", zap.String("kind", job.Kind), zap.String("pkFrom", job.PartitionKeyFrom),
		zap.String("pkTo", job.PartitionKeyTo), zap.Int("scanned", rep.Scanned), zap.Int("rewritten", rep.Rewritten),
		zap.Int("downgraded", rep.Downgraded), zap.Int("stale", rep.Stale), zap.Int("unknown", rep.Unknown), zap.Int("refused", rep.Refused), zap.Bool("more", next != nil))
	s.m.recordPage(ctx, job, next, schemaCounts(rep))
}

// Progress reads the progress of the schema jobs of the migration's current stage, as
// Migration.Progress.
//
// Errors: ErrInvalidInput (no SchemaSpec.Name), as Migration.Progress.
func (s *Schema[T]) Progress(ctx context.Context) (Progress, error) {
	if err := s.stages(); err != nil {
		return Progress{}, err
	}
	return s.m.Progress(ctx)
}
