package consistency

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/telemetry"
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
const MaxRangeConditions = filter.MaxComparisons - 7

// ArchiveRangeJob is the payload of an archive-range message: move every entity of the
// Source table that the selection holds to the TargetTable, or to blobs in
// TargetContainer (exactly one of them), as ArchiveEntity moves one.
//
// The selection is one partition (PartitionKey, optionally with RowKeyFrom/RowKeyTo), or
// a range of partitions (PartitionKeyFrom/PartitionKeyTo), and/or Where conditions; at
// least one of them must be set (a whole table is archived by archive-table). Lower
// bounds are inclusive, upper bounds exclusive, "" leaves an end open. Keys compare as
// the service orders them: by UTF-16 code units (keys.Compare).
type ArchiveRangeJob struct {
	Source           string      `json:"source"`
	PartitionKey     string      `json:"pk,omitempty"`
	RowKeyFrom       string      `json:"rkFrom,omitempty"`
	RowKeyTo         string      `json:"rkTo,omitempty"`
	PartitionKeyFrom string      `json:"pkFrom,omitempty"`
	PartitionKeyTo   string      `json:"pkTo,omitempty"`
	Where            []Condition `json:"where,omitempty"`
	TargetTable      string      `json:"targetTable,omitempty"`
	TargetContainer  string      `json:"targetContainer,omitempty"`
	// After is the job's checkpoint: the keys of the last entity an earlier delivery
	// scanned. The job moves only entities after it. nil starts at the beginning.
	After *RangeKey `json:"after,omitempty"`
}

// RangeKey is the position of an entity in a table: its PartitionKey and RowKey.
type RangeKey struct {
	PartitionKey string `json:"pk"`
	RowKey       string `json:"rk"`
}

// Condition is one comparison of an archive-range job's Where: Property Op Value, the
// value of the EDM Type given. It is data, never filter text: the filter is built from it
// by package repo/filter, so a message can choose values but never the structure of the
// query.
type Condition struct {
	// Property is the property name (an identifier; not PartitionKey or RowKey: use the
	// job's key bounds). "Timestamp" is the service's time of the entity's last write
	// (the natural "not written for a year" job): its Type must be Edm.DateTime, and the
	// re-check compares the Timestamp read back (codec.Entity.Timestamp).
	Property string `json:"property"`
	// Op is eq, ne, gt, ge, lt or le.
	Op string `json:"op"`
	// Type is the EDM type of Value: Edm.String (the default, ""), Edm.Int32, Edm.Int64,
	// Edm.Double, Edm.Boolean, Edm.DateTime (RFC 3339) or Edm.Guid. A comparison only
	// matches a property stored with that type: the job re-checks every condition (type
	// and comparison) on the entities it reads, and leaves those that fail, whatever the
	// query returned. Edm.Int64 conditions are checked only by the job, never sent in the
	// query (see the package documentation, "Range archives").
	Type string `json:"type,omitempty"`
	// Value is the value as text.
	Value string `json:"value"`
}

// conditionOps are the comparisons a Condition may name.
var conditionOps = map[string]func(prop string, v any) filter.Expr{
	"eq": filter.Eq, "ne": filter.Ne, "gt": filter.Gt, "ge": filter.Ge, "lt": filter.Lt, "le": filter.Le,
}

// condition is a Condition compiled once per delivery (rangePlan): its value parsed as
// its Type, which the re-check of every entity read (matches) compares with.
type condition struct {
	property, op string
	// want is string, int32, int64, float64, bool, time.Time or codec.GUID.
	want any
	// sent reports whether the comparison goes into the query's filter (sentInQuery).
	sent bool
	// timestamp reports that property is the service's Timestamp, which codec.DecodeEntity
	// keeps in Entity.Timestamp, not in Properties.
	timestamp bool
}

// compile checks the condition, parses its value once and builds its comparison; field
// names it in errors.
func (c Condition) compile(field string) (condition, filter.Expr, error) {
	if strings.EqualFold(c.Property, "PartitionKey") || strings.EqualFold(c.Property, "RowKey") {
		return condition{}, filter.Expr{}, errs.Invalid(field+".property", "%s: select keys with the job's key bounds", c.Property)
	}
	timestamp := c.Property == timestampProperty
	if timestamp && c.Type != "Edm.DateTime" {
		return condition{}, filter.Expr{}, errs.Invalid(field+".type", "%.40q: the Timestamp is compared as Edm.DateTime only", c.Type)
	}
	v, err := c.value(field)
	if err != nil {
		return condition{}, filter.Expr{}, err
	}
	op, ok := conditionOps[c.Op]
	if !ok {
		return condition{}, filter.Expr{}, errs.Invalid(field+".op", "%.16q is not one of eq, ne, gt, ge, lt, le", c.Op)
	}
	e := op(c.Property, v)
	if err := e.Err(); err != nil {
		return condition{}, filter.Expr{}, err
	}
	want := v
	if g, isGUID := v.(filter.GUID); isGUID {
		// The filter checked the text (8-4-4-4-12 hex digits), which ParseGUID accepts.
		parsed, err := codec.ParseGUID(string(g))
		if err != nil {
			return condition{}, filter.Expr{}, errs.Invalid(field+".value", "%.64q is not a value of type %s: %v", c.Value, c.Type, err)
		}
		want = parsed
	}
	return condition{property: c.Property, op: c.Op, want: want, sent: c.sentInQuery(), timestamp: timestamp}, e, nil
}

// timestampProperty is the service's own property: the time of an entity's last write.
const timestampProperty = "Timestamp"

// value parses Value as Type: string, int32, int64, float64, bool, time.Time or
// filter.GUID.
func (c Condition) value(field string) (any, error) {
	var v any
	var err error
	switch c.Type {
	case "", "Edm.String":
		v = c.Value
	case "Edm.Int32":
		var n int64
		n, err = strconv.ParseInt(c.Value, 10, 32)
		v = int32(n)
	case "Edm.Int64":
		v, err = strconv.ParseInt(c.Value, 10, 64)
	case "Edm.Double":
		var f float64
		f, err = strconv.ParseFloat(c.Value, 64)
		if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			err = fmt.Errorf("not a finite number")
		}
		v = f
	case "Edm.Boolean":
		v, err = strconv.ParseBool(c.Value)
	case "Edm.DateTime":
		v, err = time.Parse(time.RFC3339Nano, c.Value)
	case "Edm.Guid":
		v = filter.GUID(c.Value)
	default:
		return nil, errs.Invalid(field+".type", "%.40q is not one of Edm.String, Edm.Int32, Edm.Int64, Edm.Double, Edm.Boolean, Edm.DateTime, Edm.Guid", c.Type)
	}
	if err != nil {
		return nil, errs.Invalid(field+".value", "%.64q is not a value of type %s: %v", c.Value, c.Type, err)
	}
	return v, nil
}

// matches re-checks the condition on an entity read from storage: the property must be
// stored with the condition's type and compare as the condition says. Strings compare
// by UTF-16 code units, as the service compares them. An ordering of GUIDs (gt, ge, lt,
// le) is left to the service once the type matches; eq and ne compare the 16 bytes. A
// Timestamp condition compares e.Timestamp (absent when the read did not return it).
func (c condition) matches(e *codec.Entity) bool {
	if c.timestamp {
		want, _ := c.want.(time.Time) // compile parsed it as Edm.DateTime
		return !e.Timestamp.IsZero() && c.holds(e.Timestamp.Compare(want))
	}
	p, ok := e.Properties[c.property]
	if !ok {
		return false // the service never matches a missing property, ne included
	}
	var order int
	switch want := c.want.(type) {
	case string:
		got, isString := p.(string)
		ok, order = isString, keys.Compare(got, want)
	case int32:
		ok, order = compareAs(p, want)
	case int64:
		ok, order = compareAs(p, want)
	case float64:
		ok, order = compareAs(p, want)
	case bool:
		got, isBool := p.(bool)
		ok, order = isBool, cmp.Compare(b2i(got), b2i(want))
	case time.Time:
		got, isTime := p.(time.Time)
		ok, order = isTime, got.Compare(want)
	case codec.GUID:
		got, isGUID := p.(codec.GUID)
		if !isGUID {
			return false
		}
		if c.op != "eq" && c.op != "ne" {
			return true
		}
		ok, order = true, bytes.Compare(got[:], want[:])
	default:
		return false
	}
	return ok && c.holds(order)
}

// holds reports whether the condition's comparison holds for order, the stored value
// compared with the condition's (cmp.Compare's sign).
func (c condition) holds(order int) bool {
	switch c.op {
	case "eq":
		return order == 0
	case "ne":
		return order != 0
	case "gt":
		return order > 0
	case "ge":
		return order >= 0
	case "lt":
		return order < 0
	case "le":
		return order <= 0
	}
	return false
}

// compareAs compares p with want when p has want's type.
func compareAs[T cmp.Ordered](p any, want T) (bool, int) {
	got, ok := p.(T)
	return ok, cmp.Compare(got, want)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sentInQuery reports whether the condition goes into the query's filter. Edm.Int64
// conditions do not: Azurite fails a whole query with 500 when its Int64 literal meets
// one entity whose property holds an Edm.Int32, an Edm.Double or a boolean (package
// tabletest), and a job cannot know the stored types in advance, so they are only
// re-checked.
func (c Condition) sentInQuery() bool { return c.Type != "Edm.Int64" }

// rangePlan is an archive-range job validated and compiled once per delivery: its
// conditions parsed (the re-check of every entity read compares with the parsed values)
// and its selection filter built (every batch's source read reuses it).
type rangePlan struct {
	job   ArchiveRangeJob
	where []condition
	// sel is the job's key bounds and conditions, without the checkpoint: the filter
	// sent, without the conditions that are only re-checked (sentInQuery).
	sel filter.Expr
	// bounds is the job's key bounds alone (checkConditions samples them).
	bounds filter.Expr
}

// matches re-checks every condition of the job on an entity read from storage.
func (p *rangePlan) matches(e *codec.Entity) bool {
	for _, c := range p.where {
		if !c.matches(e) {
			return false
		}
	}
	return true
}

// scanSelect is what the job's scan reads of each entity: its keys and the properties
// its conditions name (to re-check them).
func (j ArchiveRangeJob) scanSelect() []string {
	sel := []string{"PartitionKey", "RowKey"}
	for _, c := range j.Where {
		if !slices.Contains(sel, c.Property) {
			sel = append(sel, c.Property)
		}
	}
	return sel
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

// plan validates the job (see Validate) and compiles it: its conditions parsed once and
// its selection filter built once, for every batch of the delivery.
func (j ArchiveRangeJob) plan() (*rangePlan, error) {
	if err := codec.ValidateTableName(j.Source); err != nil {
		return nil, err
	}
	bounds := []struct{ field, v string }{
		{"pk", j.PartitionKey}, {"rkFrom", j.RowKeyFrom}, {"rkTo", j.RowKeyTo}, {"pkFrom", j.PartitionKeyFrom}, {"pkTo", j.PartitionKeyTo},
	}
	for _, k := range bounds {
		if k.v == "" {
			continue
		}
		if err := codec.ValidateKey(k.field, k.v); err != nil {
			return nil, err
		}
	}
	switch {
	case j.PartitionKey != "" && (j.PartitionKeyFrom != "" || j.PartitionKeyTo != ""):
		return nil, errs.Invalid("pk", "a job selects one partition (pk) or a range of partitions (pkFrom, pkTo), not both")
	case j.PartitionKey == "" && (j.RowKeyFrom != "" || j.RowKeyTo != ""):
		return nil, errs.Invalid("rkFrom", "RowKey bounds need one partition (pk)")
	case j.RowKeyTo != "" && keys.Compare(j.RowKeyFrom, j.RowKeyTo) >= 0:
		return nil, errs.Invalid("rkTo", "must be after rkFrom (the range %q to %q is empty)", j.RowKeyFrom, j.RowKeyTo)
	case j.PartitionKeyTo != "" && keys.Compare(j.PartitionKeyFrom, j.PartitionKeyTo) >= 0:
		return nil, errs.Invalid("pkTo", "must be after pkFrom (the range %q to %q is empty)", j.PartitionKeyFrom, j.PartitionKeyTo)
	case j.PartitionKey == "" && j.PartitionKeyFrom == "" && j.PartitionKeyTo == "" && len(j.Where) == 0:
		return nil, errs.Invalid("pk", "the job selects the whole table: name a partition (pk), a range (pkFrom, pkTo) or conditions (where); archive-table archives whole tables")
	case len(j.Where) > MaxRangeConditions:
		return nil, errs.TooLarge("where", "too many conditions", len(j.Where), MaxRangeConditions)
	}
	// The target follows the rules of a single move's (exactly one, not the source).
	target := ArchiveEntityJob{Source: j.Source, PartitionKey: "-", TargetTable: j.TargetTable, TargetContainer: j.TargetContainer}
	if err := target.Validate(); err != nil {
		return nil, err
	}
	if j.After != nil {
		if err := j.checkAfter(); err != nil {
			return nil, err
		}
	}
	p := &rangePlan{job: j, where: make([]condition, 0, len(j.Where))}
	parts := []filter.Expr{}
	if j.PartitionKey != "" {
		parts = append(parts, filter.RowKeyRange(j.PartitionKey, j.RowKeyFrom, j.RowKeyTo))
	} else {
		parts = append(parts, filter.PartitionRange(j.PartitionKeyFrom, j.PartitionKeyTo))
	}
	for i, c := range j.Where {
		cond, e, err := c.compile(fmt.Sprintf("where[%d]", i))
		if err != nil {
			return nil, err
		}
		p.where = append(p.where, cond)
		if cond.sent {
			parts = append(parts, e)
		}
	}
	p.bounds = parts[0]
	p.sel = filter.And(parts...)
	if err := p.sel.Err(); err != nil {
		return nil, err
	}
	// Build the scan with a checkpoint, the largest filter the job sends.
	at := RangeKey{PartitionKey: cmp.Or(j.PartitionKey, j.PartitionKeyFrom, "a"), RowKey: "a"}
	if j.After != nil {
		at = *j.After
	}
	if _, err := p.scan(&at); err != nil {
		return nil, err
	}
	return p, nil
}

// checkAfter checks that the checkpoint is a position inside the job's selection
// (checkPosition): a continuation comes back from the queue.
func (j ArchiveRangeJob) checkAfter() error { return j.checkPosition("after", *j.After) }

// checkPosition checks that k is a position in the key order inside the job's range: a
// checkpoint, or a key the scan returned. A position only bounds a scan (the scan is the
// job's selection AND after the checkpoint), so it needs to be text the filter can carry
// (valid UTF-8, at most a key's 1 KiB), not an address: it may be a key that the job
// cannot address (an empty PartitionKey, which sorts first, inside a range open at the
// bottom; a character the service forbids in keys, stored by a store that does not
// enforce it), so that a continuation resumes after such a key rather than refusing it
// (addressable decides what moves). One outside the range is refused: a scan that
// returned it broke its filter.
func (j ArchiveRangeJob) checkPosition(field string, k RangeKey) error {
	for _, f := range []struct{ name, v string }{{field + ".pk", k.PartitionKey}, {field + ".rk", k.RowKey}} {
		if !utf8.ValidString(f.v) {
			return errs.Invalid(f.name, "is not valid UTF-8")
		}
		units := 0
		for _, r := range f.v {
			units += utf16.RuneLen(r) // valid UTF-8 holds no surrogate: 1 or 2
		}
		if units*2 > codec.MaxKeyBytes {
			return errs.TooLarge(f.name, "key longer than 1 KiB of UTF-16", units*2, codec.MaxKeyBytes)
		}
	}
	out := false
	if j.PartitionKey != "" {
		out = k.PartitionKey != j.PartitionKey || keys.Compare(k.RowKey, j.RowKeyFrom) < 0 || (j.RowKeyTo != "" && keys.Compare(k.RowKey, j.RowKeyTo) >= 0)
	} else {
		out = keys.Compare(k.PartitionKey, j.PartitionKeyFrom) < 0 || (j.PartitionKeyTo != "" && keys.Compare(k.PartitionKey, j.PartitionKeyTo) >= 0)
	}
	if out {
		return errs.Invalid(field, "the position (%q, %q) is outside the job's range", k.PartitionKey, k.RowKey)
	}
	return nil
}

// addressable checks that the keys of an entity can be read, copied and deleted by a
// move: a non-empty PartitionKey (aztables refuses an empty one on every point
// operation, and so does repo) and keys the service accepts (codec.ValidateKey). It is
// the one rule of both moves: an archive-entity job's keys (Validate) and the keys a
// range scan returns. The scan of a table written by other clients, or kept by a store
// that does not enforce the key rules, can return others: a range leaves them in the
// source and reports them.
func addressable(k RangeKey) error {
	if k.PartitionKey == "" {
		return errs.Invalid("pk", "is empty: aztables cannot address an entity without a PartitionKey")
	}
	if err := codec.ValidateKey("PartitionKey", k.PartitionKey); err != nil {
		return err
	}
	return codec.ValidateKey("RowKey", k.RowKey)
}

// scan is the filter of the job's entities after the checkpoint at (nil: from the start).
func (p *rangePlan) scan(at *RangeKey) (filter.Expr, error) {
	if at == nil {
		return p.sel, nil
	}
	var after filter.Expr
	if p.job.PartitionKey != "" {
		after = filter.Gt("RowKey", at.RowKey)
	} else {
		after = filter.Or(filter.Gt("PartitionKey", at.PartitionKey),
			filter.And(filter.PartitionKey(at.PartitionKey), filter.Gt("RowKey", at.RowKey)))
	}
	e := filter.And(p.sel, after)
	return e, e.Err()
}

// id is the message id of the job's deliveries: the same for duplicates of one job and
// of one continuation.
func (j ArchiveRangeJob) id() string {
	k := j
	k.Source, k.TargetTable = strings.ToLower(k.Source), strings.ToLower(k.TargetTable)
	b, _ := json.Marshal(k)
	sum := sha256.Sum256(b)
	return "range|" + k.Source + "|" + hex.EncodeToString(sum[:12])
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
	// conditions (re-checked on the entities read: see Condition.Type).
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
