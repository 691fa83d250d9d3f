package maintain

import (
	"cmp"
	"context"
	"errors"
	"iter"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/logx"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// JobSize is how many entities one backfill message processes before it hands the rest
// of its partition to a new message (its checkpoint).
const JobSize = 1000

// Job is the payload of an index maintenance message: the partition, and for a backfill
// the RowKey to resume after. It is read back from a queue, so it is untrusted: the
// handlers validate it (Jobs.check) before acting on it.
type Job struct {
	// PartitionKey is the partition to backfill, verify or repair.
	PartitionKey string `json:"pk"`
	// After is the RowKey a backfill resumes after ("" from the start); always "" for a
	// verify or repair job, which takes its partition whole.
	After string `json:"after,omitempty"`
}

// Summary is what a verify or repair job logs of its report: counts, and samples that
// carry keys only (no indexed value, no property of the data).
type Summary struct {
	// Entities counts the primary entities read and Copies the index copies (or list
	// entries) read.
	Entities, Copies int
	// Missing, Stale, Orphan and Conflict count the drift of each kind.
	Missing, Stale, Orphan, Conflict int
	// Unindexable counts the entities with a value no index key can hold (secondaryindex;
	// indexentity counts them in Missing). It is drift: the index lacks them.
	Unindexable int
	// Repaired counts what a repair wrote (0 for a verify).
	Repaired int
	// Samples are the report's samples, as keys.
	Samples []SampleKeys
}

// SampleKeys is one drift sample as a job logs it: its kind, the index, and the primary
// entity's keys. The copy's own key is left out: it holds the indexed value.
type SampleKeys struct {
	Drift, Index, PartitionKey, RowKey string
}

// MarshalLogObject writes s as a log object.
func (s SampleKeys) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("drift", s.Drift)
	if s.Index != "" {
		enc.AddString("index", s.Index)
	}
	enc.AddString("pk", s.PartitionKey)
	enc.AddString("rk", s.RowKey)
	return nil
}

// Jobs are the maintenance jobs of one index (or index set): their kinds, their queue and
// what each does with one partition. The packages secondaryindex and indexentity fill it
// in; Register and Start are the plumbing they share.
type Jobs struct {
	// Backfill, Verify and Repair are the message kinds.
	Backfill, Verify, Repair string
	// Queue is where the jobs and a backfill's continuations are enqueued.
	Queue *queueworker.Client
	// QueueOption names the option that sets Queue, for the error when it is nil
	// ("IntraOptions.Queue").
	QueueOption string
	// Logger receives the verify and repair jobs' report lines.
	Logger *zap.Logger
	// Check refuses, before any request, a partition key the index cannot have (a key a
	// TableStore or an index partition holds, or one the service refuses).
	Check func(pk string) error
	// BackfillPartition backfills up to limit entities of pk after after, and returns
	// where it stopped and whether the partition's end was reached.
	BackfillPartition func(ctx context.Context, pk, after string, limit int) (next string, done bool, err error)
	// VerifyPartition and RepairPartition run Verify and Repair on pk.
	VerifyPartition, RepairPartition func(ctx context.Context, pk string) (Summary, error)
}

// check validates a job read back from the queue: a forged or corrupted payload is
// refused before any request.
func (j *Jobs) check(job Job, resumable bool) error {
	if job.PartitionKey == "" {
		return errs.Invalid("maintenance job", "has no PartitionKey")
	}
	if err := codec.ValidateKey("PartitionKey", job.PartitionKey); err != nil {
		return err
	}
	if job.After != "" {
		if !resumable {
			return errs.Invalid("maintenance job", "a verify or repair job takes its partition whole: it has no After")
		}
		if err := codec.ValidateKey("RowKey", job.After); err != nil {
			return err
		}
	}
	if j.Check != nil {
		return j.Check(job.PartitionKey)
	}
	return nil
}

// Register registers the handlers of the three kinds on r. A backfill job backfills up
// to JobSize entities after its checkpoint and enqueues the next checkpoint before it
// returns, so that a stop anywhere leaves a message that resumes (this one, redelivered,
// or the next). A verify job reads its partition and logs the report; a repair job runs
// Repair and logs the report. A payload that does not validate, and work that can never
// succeed (errs.ErrInvalidInput), are cancelled into the poison queue; any other failure
// (errs.ErrOutcomeUnknown included: the rerun reads again) is retried by the worker.
// Duplicated, reordered and concurrent deliveries are harmless as long as the functions
// are idempotent, which the packages' backfill and repair are, and verify is read-only.
//
// Errors: errs.ErrInvalidInput (no Queue), those of queueworker.Handle (a kind already
// registered).
func (j *Jobs) Register(r *queueworker.Registry) error {
	if err := j.needQueue(); err != nil {
		return err
	}
	if err := queueworker.Handle(r, j.Backfill, j.backfill); err != nil {
		return err
	}
	if err := queueworker.Handle(r, j.Verify, func(ctx context.Context, m *queueworker.Message[Job]) error {
		return j.report(ctx, m, "verify", j.VerifyPartition)
	}); err != nil {
		return err
	}
	return queueworker.Handle(r, j.Repair, func(ctx context.Context, m *queueworker.Message[Job]) error {
		return j.report(ctx, m, "repair", j.RepairPartition)
	})
}

func (j *Jobs) backfill(ctx context.Context, m *queueworker.Message[Job]) error {
	if err := j.check(m.Payload, true); err != nil {
		return queueworker.Cancel(err)
	}
	pk := m.Payload.PartitionKey
	next, done, err := j.BackfillPartition(ctx, pk, m.Payload.After, JobSize)
	if errors.Is(err, errs.ErrInvalidInput) {
		return queueworker.Cancel(err)
	}
	if err != nil || done {
		return err
	}
	_, err = queueworker.Enqueue(ctx, j.Queue, j.Backfill, "", Job{PartitionKey: pk, After: next}, nil)
	return err
}

// report runs a verify or repair job and logs its summary in one line.
func (j *Jobs) report(ctx context.Context, m *queueworker.Message[Job], op string, run func(context.Context, string) (Summary, error)) error {
	if err := j.check(m.Payload, false); err != nil {
		return queueworker.Cancel(err)
	}
	s, err := run(ctx, m.Payload.PartitionKey)
	if errors.Is(err, errs.ErrInvalidInput) {
		return queueworker.Cancel(err)
	}
	if err != nil {
		return err
	}
	logx.OrNop(j.Logger).Info("index "+op,
		zap.String("kind", m.Kind), zap.String("job", m.ID), zap.String("pk", m.Payload.PartitionKey),
		zap.Int("entities", s.Entities), zap.Int("copies", s.Copies),
		zap.Int("missing", s.Missing), zap.Int("stale", s.Stale), zap.Int("orphan", s.Orphan),
		zap.Int("conflict", s.Conflict), zap.Int("unindexable", s.Unindexable),
		zap.Int("drift", s.Missing+s.Stale+s.Orphan+s.Conflict+s.Unindexable),
		zap.Int("repaired", s.Repaired), zap.Objects("samples", s.Samples))
	return nil
}

// needQueue refuses jobs without a queue.
func (j *Jobs) needQueue() error {
	if j.Queue == nil {
		return errs.Invalid(cmp.Or(j.QueueOption, "queue"), "is nil: maintenance jobs need a queue")
	}
	return nil
}

// Start enqueues one job of kind per partition (every partition that list yields when
// parts is empty). Every partition is checked before the first enqueue, so that a bad
// key sends nothing.
//
// Errors: errs.ErrInvalidInput (no Queue, a bad partition key; nothing sent), those of
// list and of queueworker.Enqueue.
func (j *Jobs) Start(ctx context.Context, kind string, parts []string, list func(ctx context.Context) iter.Seq2[string, error]) error {
	if err := j.needQueue(); err != nil {
		return err
	}
	for _, pk := range parts {
		if err := j.check(Job{PartitionKey: pk}, false); err != nil {
			return err
		}
	}
	if len(parts) == 0 {
		for pk, err := range list(ctx) {
			if err != nil {
				return err
			}
			parts = append(parts, pk)
		}
	}
	for _, pk := range parts {
		if _, err := queueworker.Enqueue(ctx, j.Queue, kind, "", Job{PartitionKey: pk}, nil); err != nil {
			return err
		}
	}
	return nil
}

// BackfillFunc adapts a package's BackfillPartition (run) to Jobs.BackfillPartition:
// options builds the call's options from a job's resume point and limit, and reached
// reads where the checkpoint it returns stands (also when it stops on an error).
func BackfillFunc[O, C any](run func(context.Context, string, *O) (C, error), options func(after string, limit int) *O, reached func(C) (after string, done bool)) func(ctx context.Context, pk, after string, limit int) (string, bool, error) {
	return func(ctx context.Context, pk, after string, limit int) (string, bool, error) {
		cp, err := run(ctx, pk, options(after, limit))
		next, done := reached(cp)
		return next, done, err
	}
}

// ReportFunc adapts a package's Verify or Repair (run, called with nil options: the
// defaults) to Jobs.VerifyPartition and Jobs.RepairPartition: summarize turns its report
// into the counts and keys a job logs. A nil report gives the zero Summary and run's
// error.
func ReportFunc[O, R any](run func(context.Context, string, *O) (*R, error), summarize func(*R) Summary) func(ctx context.Context, pk string) (Summary, error) {
	return func(ctx context.Context, pk string) (Summary, error) {
		r, err := run(ctx, pk, nil)
		if r == nil {
			return Summary{}, err
		}
		return summarize(r), err
	}
}
