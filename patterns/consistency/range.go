package consistency

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/patterns/internal/rangejob"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// KindArchiveRange is the message kind of the archive-range job.
const KindArchiveRange = "archive-range"

// RangeJobSize is how many source entities one delivery of an archive-range job scans
// (one page of keys and of the properties its conditions name) and moves before it
// hands the rest of the range to its continuation message.
const RangeJobSize = repo.MaxPageSize

// MaxRangeConditions is the most Where conditions an archive-range job may carry: the
// service accepts 15 comparisons per filter, and the key bounds and the checkpoint take
// up to 7 of them.
const MaxRangeConditions = rangejob.MaxConditions

// ArchiveRangeJob is the payload of an archive-range message: move every entity of the
// Source table that the selection holds to the TargetTable, or to blobs in
// TargetContainer (exactly one of them), as ArchiveEntity moves one.
//
// The selection is one partition (PartitionKey, optionally with RowKeyFrom/RowKeyTo), or
// a range of partitions (PartitionKeyFrom/PartitionKeyTo), and/or Where conditions; at
// least one of them must be set (a whole table is archived by archive-table). Lower
// bounds are inclusive, upper bounds exclusive, "" leaves an end open. Keys compare as
// the service orders them: by UTF-16 code units (keys.Compare). A condition is data
// (filter.Condition): it chooses a value, never the structure of the query, and the job
// re-checks it on every entity it reads.
type ArchiveRangeJob struct {
	Source           string             `json:"source"`
	PartitionKey     string             `json:"pk,omitempty"`
	RowKeyFrom       string             `json:"rkFrom,omitempty"`
	RowKeyTo         string             `json:"rkTo,omitempty"`
	PartitionKeyFrom string             `json:"pkFrom,omitempty"`
	PartitionKeyTo   string             `json:"pkTo,omitempty"`
	Where            []filter.Condition `json:"where,omitempty"`
	TargetTable      string             `json:"targetTable,omitempty"`
	TargetContainer  string             `json:"targetContainer,omitempty"`
	// After is the job's checkpoint: the keys of the last entity an earlier delivery
	// scanned. The job moves only entities after it. nil starts at the beginning.
	After *RangeKey `json:"after,omitempty"`
}

// RangeKey is the position of an entity in a table: its PartitionKey and RowKey
// (fields pk and rk in JSON).
type RangeKey rangejob.Key

// selection is the job's selection of its source's entities.
func (j ArchiveRangeJob) selection() rangejob.Selection {
	return rangejob.Selection{PartitionKey: j.PartitionKey, RowKeyFrom: j.RowKeyFrom, RowKeyTo: j.RowKeyTo,
		PartitionKeyFrom: j.PartitionKeyFrom, PartitionKeyTo: j.PartitionKeyTo, Where: j.Where, After: (*rangejob.Key)(j.After)}
}

// rangePlan is an archive-range job validated and compiled once per delivery: its
// selection's conditions parsed and its filter built (rangejob.Plan).
type rangePlan struct {
	*rangejob.Plan
	job ArchiveRangeJob
}

// Validate checks the job, its conditions and its checkpoint without sending anything.
// A job read from a queue is untrusted: the handler validates it (and the archiver its
// allowlists) before any request.
//
// Errors: ErrInvalidInput naming the field.
func (j ArchiveRangeJob) Validate() error {
	_, err := j.plan()
	return err
}

// plan validates the job (see Validate) and compiles its selection once, for every batch
// of the delivery.
func (j ArchiveRangeJob) plan() (*rangePlan, error) {
	if err := codec.ValidateTableName(j.Source); err != nil {
		return nil, err
	}
	sel := j.selection()
	p, err := sel.Plan()
	if err != nil {
		return nil, err
	}
	if sel.IsWholeTable() {
		return nil, errs.Invalid("pk", "the job selects the whole table: name a partition (pk), a range (pkFrom, pkTo) or conditions (where); archive-table archives whole tables")
	}
	// The target follows the rules of a single move's (exactly one, not the source).
	target := ArchiveEntityJob{Source: j.Source, PartitionKey: "-", TargetTable: j.TargetTable, TargetContainer: j.TargetContainer}
	if err := target.Validate(); err != nil {
		return nil, err
	}
	return &rangePlan{Plan: p, job: j}, nil
}

// id is the message id of the job's deliveries: the same for duplicates of one job and
// of one continuation.
func (j ArchiveRangeJob) id() string {
	k := j
	k.Source, k.TargetTable = strings.ToLower(k.Source), strings.ToLower(k.TargetTable)
	return rangejob.ID("range", k.Source, k)
}

// EnqueueArchiveRange enqueues an archive-range job. The message id is derived from the
// job (table names in lower case), so duplicates of one job carry the same id.
//
// Errors: ErrInvalidInput (nothing sent), and those of queueworker.Enqueue.
func EnqueueArchiveRange(ctx context.Context, c *queueworker.Client, job ArchiveRangeJob) error {
	if err := job.Validate(); err != nil {
		return err
	}
	_, err := queueworker.Enqueue(ctx, c, KindArchiveRange, job.id(), job, nil)
	return err
}

// RangeReport is what an archive-range run did.
type RangeReport struct {
	// Moved counts the entities this run deleted from the source after their copy was
	// in the target (not those a concurrent run moved). A delete transaction whose
	// response was lost counts the entities the next pass finds gone with their copy at
	// the version it deleted (a concurrent run that deleted them just then is counted
	// too: the two cannot be told apart).
	Moved int
	// Scanned counts the source entities the run's scan returned that match the job's
	// conditions (re-checked on the entities read: see filter.Condition.Type).
	Scanned int
	// Skipped lists the keys of the entities the run left in the source because the
	// target cannot take their copy (252 custom properties and the copy's own, a copy
	// over 1 MiB, a blob name too long) or the job cannot address them (an empty
	// PartitionKey; a key with a character the service forbids, kept by a store that
	// does not enforce the rule), in the service's order. The rest of the range moves;
	// each is also logged (keys only) as a warning.
	Skipped []RangeKey
	// Changed lists the keys of the entities that another client wrote again between
	// their copy and their delete in every pass of their batch (Options.Retry bounds the
	// passes, or whose later passes met a concurrent delivery's writes of their copies),
	// in the service's order: the rest of the batch moved without them, and
	// each is left in the source at its newer version, beside the copy of an older one
	// in the target; a later run of the job moves it. Each is also logged (keys only)
	// as a warning.
	Changed []RangeKey
	// Warnings says which of the job's conditions can match nothing in what the run
	// read: a property that never occurs in the entities scanned (or, when the scan
	// selected none, in a sample of the key range), or occurs there with another EDM
	// type than the condition's. Each is also logged as a warning. They are not errors:
	// a range can hold nothing to move.
	Warnings []string
	// Next is the checkpoint to continue from; nil when the range is done.
	Next *RangeKey
}

// ArchiveRange runs an archive-range job to its end in this call: it scans the
// selection after job.After in pages of RangeJobSize keys, and moves each page in batches
// (see the package documentation, "Range archives"). A job run by the worker moves one
// page per delivery and enqueues its continuation (Options.Queue). The report counts what
// was done before an error too.
//
// Errors: ErrInvalidInput (nothing sent; also a scan that returned a key outside the
// range, or one entity whose delete and companion actions exceed a transaction; an
// entity the target cannot take is not an error: RangeReport.Skipped), ErrNotAllowed (nothing sent),
// ErrNothingToArchive (the source table does not exist), ErrTransient, *repo.Error, and
// the errors of the source table's companions.
func (a *Archiver) ArchiveRange(ctx context.Context, job ArchiveRangeJob) (RangeReport, error) {
	var total RangeReport
	p, err := a.planRange(job)
	if err != nil {
		return total, err
	}
	for {
		rep, err := a.archiveRangePage(ctx, p)
		total.Moved += rep.Moved
		total.Scanned += rep.Scanned
		total.Skipped = append(total.Skipped, rep.Skipped...)
		total.Changed = append(total.Changed, rep.Changed...)
		for _, w := range rep.Warnings {
			if !slices.Contains(total.Warnings, w) {
				total.Warnings = append(total.Warnings, w)
			}
		}
		if err != nil || rep.Next == nil {
			return total, err
		}
		// A checkpoint of the page's own scan: batches checked each key it returned
		// against the range (checkAfter) and the order.
		p.job.After = rep.Next
	}
}

// planRange validates and compiles a job (ArchiveRangeJob.plan) and checks it against
// the allowlists, before any request.
func (a *Archiver) planRange(job ArchiveRangeJob) (*rangePlan, error) {
	p, err := job.plan()
	if err != nil {
		return nil, err
	}
	if err := a.allowed(job.Source, job.TargetTable, job.TargetContainer); err != nil {
		return nil, err
	}
	return p, nil
}

// handleRange is the worker's handler of an archive-range message. With Options.Queue it
// moves one page (RangeJobSize keys) and enqueues the continuation, the same job with
// After at the last key scanned, before it returns: a stop anywhere leaves a message that
// resumes (this one, delivered again, or the continuation). Without it the job runs to
// its end in this delivery, and a stop resumes from this message's checkpoint.
func (a *Archiver) handleRange(ctx context.Context, job ArchiveRangeJob) (err error) {
	ctx, span := telemetry.Start(ctx, "consistency.archive_range", telemetry.KeyTable.String(job.Source),
		telemetry.KeyTargetTable.String(job.TargetTable), telemetry.KeyContainer.String(job.TargetContainer))
	var rep RangeReport
	defer func() {
		span.SetAttributes(telemetry.KeyCount.Int(rep.Moved))
		telemetry.End(span, err)
	}()
	if a.opts.Queue == nil {
		rep, err = a.ArchiveRange(ctx, job)
	} else {
		rep, err = a.rangeDelivery(ctx, job)
	}
	a.logPage(job, rep, err)
	if a.opts.RangeDone != nil {
		a.opts.RangeDone(job, rep, err)
	}
	if permanent(err) || errors.Is(err, ErrNothingToArchive) {
		return queueworker.Cancel(err)
	}
	return err
}

// rangeDelivery moves one page of job and enqueues its continuation (see handleRange).
func (a *Archiver) rangeDelivery(ctx context.Context, job ArchiveRangeJob) (RangeReport, error) {
	p, err := a.planRange(job)
	if err != nil {
		return RangeReport{}, err
	}
	rep, err := a.archiveRangePage(ctx, p)
	if err != nil || rep.Next == nil {
		return rep, err
	}
	next := job
	next.After = rep.Next
	if _, err := queueworker.Enqueue(ctx, a.opts.Queue, KindArchiveRange, next.id(), next, nil); err != nil {
		return rep, err
	}
	return rep, a.after(KindArchiveRange, "continued")
}
