package denormalize

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/settle"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Key identifies an entity: its PartitionKey and RowKey.
type Key struct {
	PartitionKey, RowKey string
}

func compareKeys(a, b Key) int {
	if c := strings.Compare(a.PartitionKey, b.PartitionKey); c != 0 {
		return c
	}
	return strings.Compare(a.RowKey, b.RowKey)
}

// Mode says where a relation's copies live and so how they are kept consistent.
type Mode int

const (
	// InPartition: every target lives in its source's partition of the same table (the
	// guide's department entity next to its manager's employee entity). The source, its
	// copies and the bookkeeping change in one entity group transaction: atomic.
	InPartition Mode = iota
	// AcrossPartitions: targets live anywhere (another partition, another table). Writes
	// enqueue a message first; the worker refreshes the copies: eventual.
	AcrossPartitions
)

// String returns the mode's name, "InPartition" or "AcrossPartitions".
func (m Mode) String() string {
	if m == AcrossPartitions {
		return "AcrossPartitions"
	}
	return "InPartition"
}

// MaxInPartitionCopies is the most copies one source may have in InPartition mode: one
// entity group transaction holds 100 actions, and an update of the source needs two more
// (the source and its link header).
const MaxInPartitionCopies = repo.MaxTransactionActions - 2

// DefaultSettle is the default Options.Settle.
const DefaultSettle = time.Minute

// DefaultConcurrency bounds the reads and writes of copies run at once.
const DefaultConcurrency = 8

// maxRounds bounds the re-reads of one reconciliation while the entities keep changing
// under it; past it the message is retried later.
const maxRounds = 8

// Options configures a Relation. nil means the zero value, whose every field is its
// documented default.
type Options struct {
	// Settle bounds, in AcrossPartitions mode, how long a change may take to become visible:
	// a write enqueues its message first and then writes, both within Settle/2 of the
	// moment before the message was built; a worker that finds the write not (yet) there
	// reconciles what it finds and looks again until the message is Settle old. It must
	// exceed the clock skew between writers and workers. Defaults to DefaultSettle; at
	// least 2 seconds. Unused in InPartition mode.
	Settle time.Duration
	// MaxCopies bounds the copies of one source in InPartition mode, checked when a target
	// is linked. Defaults to MaxInPartitionCopies, which is also the most it may be.
	// Unused in AcrossPartitions mode.
	MaxCopies int
	// Concurrency bounds the reads and writes of copies run at once. Defaults to
	// DefaultConcurrency.
	Concurrency int
	// Conflict is the backoff of writes retried after another writer changed an entity
	// first. Zero fields take retry.Conflict()'s values; its Logger defaults to the
	// sources table's.
	Conflict retry.Policy
}

// Relation keeps copies of a source entity's details (type S, the manager's employee
// entity) inside target entities (type D, the departments) consistent: UpdateSource
// writes a source and its copies together, PutTarget writes a target with a fresh copy of
// its source, and Copies lists where a source is copied. See the package documentation for
// the two modes. A Relation is safe for concurrent use.
//
// Write sources and targets only through the Relation: a write through the tables alone
// leaves the copies or the links behind.
type Relation[S, D any] struct {
	sources   *repo.Table[S]
	targets   *repo.Table[D]
	links     *repo.Table[linkRow]
	scodec    *codec.Codec[S]
	tcodec    *codec.Codec[D]
	name      string
	mode      Mode
	ref       func(*D) (Key, bool)
	copyFn    func(*D, *S)
	queue     *queueworker.Client
	settle    settle.Window
	maxCopies int
	conc      int
	conflict  retry.Policy
	lo, hi    string // the RowKeys of this relation's link rows, in every source partition

	seams seams // set by tests only
}

// linkRow is a link (source -> one target) or, with no target, the link header of a source
// (InPartition mode: the count of its copies, and the entity every write of the relation
// touches, so that concurrent writes of one source's relation serialise on its ETag).
type linkRow struct {
	PartitionKey       string `table:",pk"`
	RowKey             string `table:",rk"`
	TargetPartitionKey string `table:"TargetPartitionKey,omitempty"`
	TargetRowKey       string `table:"TargetRowKey,omitempty"`
	Copies             int32  `table:"Copies"`
	ETag               string `table:",etag"`
}

const tagLink = "link"

const maxNameChars = 64

// New returns the relation named name (e.g. "Manager"; 1 to 64 characters) between the
// sources and the targets of one table, in InPartition mode: every target lives in its
// source's partition, and a source, its copies and the bookkeeping change in one entity
// group transaction. ref returns the key of the source a target copies (the department's
// manager; ok false when it copies none), and copy writes the details of a source that a
// target keeps into it; both must be pure and deterministic, and copy must not change the
// target's keys or its reference. Link entities have RowKeys "link!<name>!<source
// RowKey>!..." in the source's partition. The logger is the sources table's. It sends
// nothing.
//
// Errors: errs.ErrInvalidInput when a table, ref or copy is nil, S or D has no ETag field (the
// pattern relies on optimistic concurrency), the two tables differ, name is empty or too
// long, or an option is out of range.
func New[S, D any](sources *repo.Table[S], targets *repo.Table[D], name string, ref func(d *D) (src Key, ok bool), copy func(d *D, s *S), opts *Options) (*Relation[S, D], error) {
	return newRelation(sources, targets, name, ref, copy, InPartition, nil, opts)
}

// NewAcross returns the relation named name between sources and targets that may live
// anywhere (another partition, another table), in AcrossPartitions mode: writes enqueue a
// message on queue first, and the worker refreshes the copies (see Register). Its
// messages have the kinds "denormalize.source.<name>" and "denormalize.target.<name>".
// The other arguments are those of New. It sends nothing.
//
// Errors: those of New, except that the tables may differ, and errs.ErrInvalidInput for a nil
// queue.
func NewAcross[S, D any](sources *repo.Table[S], targets *repo.Table[D], name string, ref func(d *D) (src Key, ok bool), copy func(d *D, s *S), queue *queueworker.Client, opts *Options) (*Relation[S, D], error) {
	if queue == nil {
		return nil, errs.Invalid("queue", "is nil: AcrossPartitions mode reconciles through the queue's worker")
	}
	return newRelation(sources, targets, name, ref, copy, AcrossPartitions, queue, opts)
}

func newRelation[S, D any](sources *repo.Table[S], targets *repo.Table[D], name string, ref func(*D) (Key, bool), copyFn func(*D, *S), mode Mode, queue *queueworker.Client, opts *Options) (*Relation[S, D], error) {
	if sources == nil || targets == nil {
		return nil, errs.Invalid("table", "is nil")
	}
	if !sources.Codec().HasETag() || !targets.Codec().HasETag() {
		return nil, errs.Invalid("entity type", "sources and targets need an ETag field: copies are written conditional on the version read")
	}
	if name == "" || utf8.RuneCountInString(name) > maxNameChars || !utf8.ValidString(name) {
		return nil, errs.Invalid("name", "must be 1 to %d characters of valid UTF-8, got %q", maxNameChars, name)
	}
	switch {
	case ref == nil:
		return nil, errs.Invalid("ref", "is nil")
	case copyFn == nil:
		return nil, errs.Invalid("copy", "is nil")
	case mode == InPartition && targets.Name() != sources.Name():
		return nil, errs.Invalid("targets", "table %q differs from the sources' table %q: InPartition mode keeps targets in their source's partition (use NewAcross)", targets.Name(), sources.Name())
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	w, err := settle.New(o.Settle, DefaultSettle, "Options.Settle")
	if err != nil {
		return nil, err
	}
	r := &Relation[S, D]{
		sources: sources, targets: targets, scodec: sources.Codec(), tcodec: targets.Codec(),
		name: name, mode: mode, ref: ref, copyFn: copyFn, queue: queue,
		settle: w, maxCopies: o.MaxCopies, conc: o.Concurrency,
	}
	switch {
	case r.maxCopies == 0:
		r.maxCopies = MaxInPartitionCopies
	case r.maxCopies < 1 || r.maxCopies > MaxInPartitionCopies:
		return nil, errs.Invalid("Options.MaxCopies", "must be 1 to %d, got %d", MaxInPartitionCopies, r.maxCopies)
	}
	switch {
	case r.conc == 0:
		r.conc = DefaultConcurrency
	case r.conc < 1:
		return nil, errs.Invalid("Options.Concurrency", "must be at least 1, got %d", r.conc)
	}
	r.conflict = o.Conflict.Or(retry.Policy{Logger: sources.Logger()}.Or(retry.Conflict()))
	if err := r.conflict.Validate(); err != nil {
		return nil, err
	}
	if r.links, err = repo.OfType[linkRow](sources); err != nil {
		return nil, err
	}
	if mode == InPartition {
		// One service client for both, so that they can share a transaction.
		if r.targets, err = repo.OfType[D](sources); err != nil {
			return nil, err
		}
	}
	if r.lo, r.hi, err = keys.Escaped().Range(tagLink, name); err != nil {
		return nil, err
	}
	return r, nil
}

// Sources returns the repository of the sources, for reads. Writes through it bypass the
// relation.
func (r *Relation[S, D]) Sources() *repo.Table[S] { return r.sources }

// Targets returns the repository of the targets, for reads. Writes through it bypass the
// relation.
func (r *Relation[S, D]) Targets() *repo.Table[D] { return r.targets }

// Mode returns the relation's mode.
func (r *Relation[S, D]) Mode() Mode { return r.mode }

// KeyRange returns the RowKeys [lo, hi) that this relation's link rows occupy in the
// sources' partitions. Source and (in InPartition mode) target RowKeys may not fall in it.
func (r *Relation[S, D]) KeyRange() (lo, hi string) { return r.lo, r.hi }

// checkKey validates a key for a request, and keeps it out of the link rows' range when it
// lives in the sources' table.
func (r *Relation[S, D]) checkKey(field string, k Key, inSourceTable bool) error {
	if k.PartitionKey == "" {
		return errs.Invalid(field+" PartitionKey", "is empty")
	}
	if err := codec.ValidateKey("PartitionKey", k.PartitionKey); err != nil {
		return err
	}
	if err := codec.ValidateKey("RowKey", k.RowKey); err != nil {
		return err
	}
	if inSourceTable && k.RowKey >= r.lo && (r.hi == "" || k.RowKey < r.hi) {
		return errs.Invalid(field+" RowKey", "%q lies in the RowKeys of relation %q's link rows [%q, %q)", k.RowKey, r.name, r.lo, r.hi)
	}
	return nil
}

func (r *Relation[S, D]) targetsShareSourceTable() bool { return r.targets.Name() == r.sources.Name() }

// checkTarget refuses, before any request, a target the relation cannot store.
func (r *Relation[S, D]) checkTarget(d *D) (k, ref Key, ok bool, err error) {
	if d == nil {
		return Key{}, Key{}, false, errs.Invalid("target", "is nil")
	}
	if _, err := r.tcodec.Encode(d); err != nil {
		return Key{}, Key{}, false, err
	}
	pk, rk := r.tcodec.Keys(d)
	k = Key{pk, rk}
	if err := r.checkKey("target", k, r.targetsShareSourceTable()); err != nil {
		return Key{}, Key{}, false, err
	}
	ref, ok = r.ref(d)
	if !ok {
		return k, Key{}, false, nil
	}
	if err := r.checkKey("source", ref, true); err != nil {
		return Key{}, Key{}, false, err
	}
	if _, err := r.linkKey(ref, k); err != nil {
		return Key{}, Key{}, false, err
	}
	if r.mode == InPartition && ref.PartitionKey != k.PartitionKey {
		return Key{}, Key{}, false, errs.Invalid("source", "PartitionKey %q differs from the target's %q: InPartition mode keeps targets in their source's partition (use AcrossPartitions)", ref.PartitionKey, k.PartitionKey)
	}
	return k, ref, true, nil
}

// checkSource refuses, before any request, a source the relation cannot store.
func (r *Relation[S, D]) checkSource(s *S) (Key, error) {
	if s == nil {
		return Key{}, errs.Invalid("source", "is nil")
	}
	if _, err := r.scodec.Encode(s); err != nil {
		return Key{}, err
	}
	pk, rk := r.scodec.Keys(s)
	k := Key{pk, rk}
	return k, r.checkKey("source", k, true)
}

// getTarget reads a target; found is false when it does not exist.
func (r *Relation[S, D]) getTarget(ctx context.Context, k Key) (D, bool, error) {
	d, err := r.targets.Get(ctx, k.PartitionKey, k.RowKey)
	if errors.Is(err, repo.ErrNotFound) {
		return d, false, nil
	}
	return d, err == nil, err
}

// getSource reads a source, naming it in a not-found error.
func (r *Relation[S, D]) getSource(ctx context.Context, src Key) (S, error) {
	s, err := r.sources.Get(ctx, src.PartitionKey, src.RowKey)
	if errors.Is(err, repo.ErrNotFound) {
		return s, &sourceNotFoundError{src: src, err: err}
	}
	return s, err
}

type sourceNotFoundError struct {
	src Key
	err error
}

func (e *sourceNotFoundError) Error() string {
	return "denormalize: source (PartitionKey=" + e.src.PartitionKey + ", RowKey=" + e.src.RowKey + ") not found: " + e.err.Error()
}
func (e *sourceNotFoundError) Unwrap() error { return e.err }

// copied returns d with a fresh copy of s, and whether that changes what d stores.
func (r *Relation[S, D]) copied(d D, s *S) (D, bool) {
	before, err1 := r.tcodec.Encode(&d)
	next := d
	r.copyFn(&next, s)
	after, err2 := r.tcodec.Encode(&next)
	return next, err1 != nil || err2 != nil || !bytes.Equal(before, after)
}

// fingerprint identifies the content of a source, so that a handler can tell whether the
// write its message announced has landed.
func (r *Relation[S, D]) fingerprint(s *S) string {
	b, err := r.scodec.Encode(s)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// An outcome repo cannot prove (errs.ErrOutcomeUnknown) counts too, for the handlers,
// which derive what they write from fresh reads; the callers' writes decide it first
// (targetOutcome, sourceOutcome).
func isConflict(err error) bool {
	return errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrAlreadyExists) || errors.Is(err, repo.ErrNotFound) ||
		errors.Is(err, repo.ErrOutcomeUnknown)
}

// actionConflict reports whether err is a conflict on an action of a transaction at index
// from or later.
// An outcome repo cannot prove names no action: it counts only for from == 0, where the
// caller retries the whole write from its read.
func actionConflict(err error, from int) bool {
	if errors.Is(err, repo.ErrOutcomeUnknown) {
		return from == 0
	}
	var ae *repo.ActionError
	return errors.As(err, &ae) && ae.Index >= from && isConflict(err)
}

func (r *Relation[S, D]) loop(ctx context.Context, name string, k Key, attempt func(ctx context.Context) error) error {
	op := retry.Op{Name: "denormalize " + name, Resource: r.sources.Name(), PartitionKey: k.PartitionKey, RowKey: k.RowKey}
	return retry.Optimistic(ctx, r.conflict, op, func(ctx context.Context, _ int) error { return attempt(ctx) })
}

// preconditionFailed is the error of a write whose caller-supplied ETag no longer matches,
// found by the read that precedes the write (so nothing was written).
func preconditionFailed(op, table string, k Key) error {
	return errs.Precondition(op, table, k.PartitionKey, k.RowKey, "the entity's ETag changed since it was read: another writer changed it (read it again and redo the change)")
}
