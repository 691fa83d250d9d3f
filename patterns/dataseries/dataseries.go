package dataseries

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Number is the type of a series' points: stored as Edm.Int32, Edm.Int64 or Edm.Double.
type Number interface {
	~int32 | ~int64 | ~float64
}

// MaxPoints is the longest series one entity holds: the service's 252 custom properties,
// less the one that records applied operations (OpsProperty) and the one that holds the
// table's write history (repo.Options.TrackWrites, which New requires). A longer series
// does not fit one entity by design: store it as a wide entity (patterns/wideentity) or in
// a blob.
const MaxPoints = codec.MaxProperties - 2

// OpsProperty is the property where a series records the ids of the last operations it
// applied (see AddOptions.OpID). It never collides with a point, whose name ends with
// digits.
const OpsProperty = "AppliedOps"

// MaxOpIDLen is the longest operation id accepted.
const MaxOpIDLen = 64

// Defaults of Options.
const DefaultOpHistory = 64

// Layout is the shape of every series of a Store: how many points, and the property names
// that hold them.
type Layout struct {
	// Points is the number of points, 1 to MaxPoints: 24 for hourly counts of a day.
	Points int
	// Prefix starts the name of each point's property; the point's index follows,
	// zero-padded to the width of Points-1: Prefix "H" and 24 points give H00 to H23.
	// Defaults to "P".
	Prefix string
}

// Options configures a Store. The zero value (or nil) gives the documented defaults.
type Options struct {
	// Conflict is the backoff between the attempts of Add and Update that lost a race to
	// another writer. Zero fields take retry.Conflict()'s values, field by field
	// (Conflict{MaxRetries: 5} keeps the conflict delays); its Logger defaults to the
	// table's.
	Conflict retry.Policy
	// OpHistory is how many operation ids a series remembers (see AddOptions.OpID).
	// Defaults to DefaultOpHistory (64); at most 256.
	OpHistory int
}

// Series is one series: its keys, its points and its ETag.
type Series[V Number] struct {
	PartitionKey, RowKey string
	// Points has Layout.Points values; a point never written is 0.
	Points []V
	// ETag is the entity's ETag when read (Get) or written (Put, Add, Update). Put is
	// conditional on it when set.
	ETag string
}

// Store reads and writes series of type V in one table, one series per entity
// (the Azure Table storage design guide, "data series pattern"). A Store is safe for concurrent use.
type Store[V Number] struct {
	table    *repo.Table[codec.Entity]
	names    []string
	index    map[string]int
	kind     reflect.Kind
	conflict retry.Policy
	history  int
}

// New returns the Store of series with layout in table, a table of dynamic entities built
// with repo.Options.TrackWrites (a write whose response was lost is then recognised
// exactly; see Add). The table's retry policy and logger are the Store's. New sends nothing
// (create the table with Table().CreateIfNotExists).
//
// Errors: errs.ErrInvalidInput (an *errs.InvalidInputError) for a nil table, a table
// without TrackWrites or tracking writes in OpsProperty or a point's property
// (repo.Options.WriteIDProperty), invalid options, a Prefix that does not make valid property names,
// or a layout of more than MaxPoints points — such a series does not fit one entity: use
// patterns/wideentity or a blob.
func New[V Number](table *repo.Table[codec.Entity], layout Layout, opts *Options) (*Store[V], error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if table == nil {
		return nil, errs.Invalid("table", "is nil")
	}
	if !table.TracksWrites() {
		return nil, errs.Invalid("repo.Options.TrackWrites", "must be on for the table of a data series: without it a retried Add whose response was lost cannot be recognised")
	}
	if layout.Points < 1 {
		return nil, errs.Invalid("Layout.Points", "must be at least 1, got %d", layout.Points)
	}
	if layout.Points > MaxPoints {
		return nil, errs.TooLarge("Layout.Points", "a series this long does not fit one entity (252 properties, two of them for the applied operations and the write history): store it as a wide entity (patterns/wideentity) or in a blob", layout.Points, MaxPoints)
	}
	if layout.Prefix == "" {
		layout.Prefix = "P"
	}
	width := len(strconv.Itoa(layout.Points - 1))
	names := make([]string, layout.Points)
	index := make(map[string]int, layout.Points)
	for i := range names {
		names[i] = fmt.Sprintf("%s%0*d", layout.Prefix, width, i)
		index[names[i]] = i
	}
	if err := codec.ValidatePropertyName(names[len(names)-1]); err != nil {
		return nil, errs.Invalid("Layout.Prefix", "%q does not make valid property names: %v", layout.Prefix, err)
	}
	// The write history is appended to every write of a series: it must not be one of
	// the series' own properties, or each write would carry that name twice (and the
	// table's reads hide it: the operation ids or the point would be lost).
	if tp := table.WriteIDProperty(); tp == OpsProperty {
		return nil, errs.Invalid("repo.Options.WriteIDProperty", "%q is where a series records its applied operations (OpsProperty): choose another name", tp)
	} else if _, isPoint := index[tp]; isPoint {
		return nil, errs.Invalid("repo.Options.WriteIDProperty", "%q is the name of a point of the layout: choose another name, or another Layout.Prefix", tp)
	}
	if o.OpHistory == 0 {
		o.OpHistory = DefaultOpHistory
	}
	if o.OpHistory < 1 || o.OpHistory > 256 {
		return nil, errs.Invalid("Options.OpHistory", "must be between 1 and 256, got %d", o.OpHistory)
	}
	// field by field: Conflict{MaxRetries: 5} keeps the conflict delays
	o.Conflict = o.Conflict.Or(retry.Conflict())
	if o.Conflict.Logger == nil {
		o.Conflict.Logger = table.Logger()
	}
	if err := o.Conflict.Validate(); err != nil {
		return nil, err
	}
	return &Store[V]{table: table, names: names, index: index, kind: reflect.TypeFor[V]().Kind(), conflict: o.Conflict, history: o.OpHistory}, nil
}

// Table returns the underlying table of dynamic entities.
func (s *Store[V]) Table() *repo.Table[codec.Entity] { return s.table }

// PointName returns the property name of point i, or "" if i is out of range.
func (s *Store[V]) PointName(i int) string {
	if i < 0 || i >= len(s.names) {
		return ""
	}
	return s.names[i]
}

// stored converts v to the exact Go type codec stores as V's Edm type.
func (s *Store[V]) stored(v V) any {
	switch s.kind {
	case reflect.Int32:
		return int32(v)
	case reflect.Int64:
		return int64(v)
	}
	return float64(v)
}

// decode reads the points of e; a point of another numeric type (written by another
// client) is converted, a non-numeric one is an error.
func (s *Store[V]) decode(e *codec.Entity) (Series[V], error) {
	out := Series[V]{PartitionKey: e.PartitionKey, RowKey: e.RowKey, ETag: e.ETag, Points: make([]V, len(s.names))}
	for i, name := range s.names {
		switch x := e.Properties[name].(type) {
		case nil:
		case int32:
			out.Points[i] = V(x)
		case int64:
			out.Points[i] = V(x)
		case float64:
			out.Points[i] = V(x)
		default:
			return Series[V]{}, &codec.DecodeError{Field: name, Property: name, Reason: fmt.Sprintf("holds a %T, not a number", x)}
		}
	}
	return out, nil
}

func (s *Store[V]) checkKeys(pk, rk string) error {
	if pk == "" {
		return errs.Invalid("PartitionKey", "is empty")
	}
	if err := codec.ValidateKey("PartitionKey", pk); err != nil {
		return err
	}
	return codec.ValidateKey("RowKey", rk)
}

func (s *Store[V]) checkIndex(i int) error {
	if i < 0 || i >= len(s.names) {
		return errs.Invalid("point", "index %d is outside [0, %d)", i, len(s.names))
	}
	return nil
}

// Get reads a series with one point query: every point in one request, the point of the
// pattern (against one request, or one entity each, per point).
//
// Errors: errs.ErrNotFound (no such series), errs.ErrInvalidInput (keys), *codec.DecodeError (a
// point holds something else than a number), errs.ErrTransient, *errs.ServiceError.
func (s *Store[V]) Get(ctx context.Context, pk, rk string) (Series[V], error) {
	if err := s.checkKeys(pk, rk); err != nil {
		return Series[V]{}, err
	}
	e, err := s.table.Get(ctx, pk, rk)
	if err != nil {
		return Series[V]{}, err
	}
	return s.decode(&e)
}

// Set stores v as point i of a series with one request: a merge of that one property,
// which creates the series if needed and leaves the other points (and any other
// property) as they are. It is unconditional and idempotent: the last Set of a point wins.
//
// Errors: errs.ErrInvalidInput (keys, index; nothing sent), errs.ErrTransient, *errs.ServiceError.
func (s *Store[V]) Set(ctx context.Context, pk, rk string, i int, v V) error {
	if err := s.checkKeys(pk, rk); err != nil {
		return err
	}
	if err := s.checkIndex(i); err != nil {
		return err
	}
	e := &codec.Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]any{s.names[i]: s.stored(v)}}
	return s.table.Upsert(ctx, e, &repo.UpsertOptions{Mode: repo.Merge})
}

// Put stores every point of series with one request (a merge of the point properties,
// leaving other properties as they are). When series.ETag is set, the write is
// conditional on it (errs.ErrPreconditionFailed if the series changed since it was read);
// otherwise it creates or overwrites the points. On success series.ETag holds the new
// ETag.
//
// Errors: errs.ErrInvalidInput (keys, a Points slice of the wrong length; nothing sent),
// errs.ErrPreconditionFailed, errs.ErrNotFound (conditional write of a deleted series),
// errs.ErrTransient, *errs.ServiceError.
func (s *Store[V]) Put(ctx context.Context, series *Series[V]) error {
	if series == nil {
		return errs.Invalid("series", "is nil")
	}
	if err := s.checkKeys(series.PartitionKey, series.RowKey); err != nil {
		return err
	}
	if len(series.Points) != len(s.names) {
		return errs.Invalid("Points", "has %d points, the layout %d", len(series.Points), len(s.names))
	}
	e := &codec.Entity{PartitionKey: series.PartitionKey, RowKey: series.RowKey, ETag: series.ETag, Properties: make(map[string]any, len(s.names))}
	for i, v := range series.Points {
		e.Properties[s.names[i]] = s.stored(v)
	}
	var err error
	if series.ETag != "" {
		err = s.table.Update(ctx, e, &repo.UpdateOptions{Mode: repo.Merge})
	} else {
		err = s.table.Upsert(ctx, e, &repo.UpsertOptions{Mode: repo.Merge})
	}
	if err == nil {
		series.ETag = e.ETag
	}
	return err
}

// AddOptions configures Add. nil means the zero value.
type AddOptions struct {
	// OpID, if set, makes the operation idempotent: the series records the ids of the last
	// Options.OpHistory operations in OpsProperty, in the same write as the change, and an
	// operation whose id is recorded is not applied again. Use the id of what causes the
	// change (a queue message id, an event id), so that a redelivered message, a retried
	// call or a rerun after a crash counts once. At most MaxOpIDLen bytes, without spaces or
	// control characters.
	OpID string
}

// Add adds delta to point i of a series and returns the point's new value. It reads the
// series, then writes the new value with a merge conditional on the ETag it read
// (If-Match); when another writer changed the series in between (412), or created it first
// (409), it reads again and retries with a jittered backoff (Options.Conflict). No update
// is lost, however many writers add at once; under heavy contention each Add costs more
// requests, which is the price the guide names for optimistic concurrency. A missing
// series is created.
//
// Every Add and Update carries an operation id (a random one when opts gives none), stored
// with the change in the same write: a write whose response was lost (errs.ErrOutcomeUnknown
// from repo, even when another writer's change followed it) is recognised on the re-read by
// its id (success, as long as the id is among the last Options.OpHistory operations of the
// series), and never applied twice: it is applied again only when the re-read shows the
// series still at the version it read, and otherwise the errs.ErrOutcomeUnknown error is
// returned (a series changed or re-created without the id may be another writer's doing
// after this write landed). Give your own OpID to settle that case, a retried call or a
// redelivered message: calling again with the same id counts it once.
//
// Errors: errs.ErrInvalidInput (keys, index, OpID; nothing sent), errs.ErrNotFound (no such table,
// or the series was deleted during the update), errs.ErrOutcomeUnknown (see above),
// errs.ErrTransient (also when the conflict retries are exhausted:
// errors.Is(err, errs.ErrPreconditionFailed) tells that case), *codec.DecodeError,
// *errs.ServiceError.
func (s *Store[V]) Add(ctx context.Context, pk, rk string, i int, delta V, opts *AddOptions) (V, error) {
	if err := s.checkIndex(i); err != nil {
		return 0, err
	}
	var opID string
	if opts != nil {
		opID = opts.OpID
	}
	out, err := s.update(ctx, pk, rk, opID, func(points []V) ([]int, error) {
		points[i] += delta
		return []int{i}, nil
	})
	if err != nil {
		return 0, err
	}
	return out.Points[i], nil
}

// UpdateOptions configures Update. nil means the zero value.
type UpdateOptions struct {
	// OpID makes the update idempotent, as AddOptions.OpID.
	OpID string
}

// Update runs a read-modify-write of a series under optimistic concurrency: fn receives a
// copy of the points (zeros for a new series), changes them, and the points that differ
// are written with one merge conditional on the ETag read, retried from the read on
// conflicts as in Add. fn may run several times and must only compute from its argument.
// An error from fn stops Update and is returned as it is. It returns the series as
// written.
//
// Errors: those of Add, and fn's.
func (s *Store[V]) Update(ctx context.Context, pk, rk string, fn func(points []V) error, opts *UpdateOptions) (Series[V], error) {
	if fn == nil {
		return Series[V]{}, errs.Invalid("fn", "is nil")
	}
	var opID string
	if opts != nil {
		opID = opts.OpID
	}
	return s.update(ctx, pk, rk, opID, func(points []V) ([]int, error) {
		before := slices.Clone(points)
		if err := fn(points); err != nil {
			return nil, err
		}
		if len(points) != len(before) {
			return nil, errs.Invalid("Points", "fn changed the number of points")
		}
		var changed []int
		for i := range points {
			if points[i] != before[i] {
				changed = append(changed, i)
			}
		}
		return changed, nil
	})
}

func checkOpID(id string) error {
	if len(id) > MaxOpIDLen {
		return errs.TooLarge("OpID", "too long", len(id), MaxOpIDLen)
	}
	if strings.ContainsFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return errs.Invalid("OpID", "%q holds a space or a control character", id)
	}
	return nil
}

// fnError carries an error of the caller's fn through retry.Do, which does not retry it.
type fnError struct{ err error }

func (e *fnError) Error() string { return e.err.Error() }
func (e *fnError) Unwrap() error { return e.err }

// update is the read-modify-write loop of Add and Update.
func (s *Store[V]) update(ctx context.Context, pk, rk, opID string, change func(points []V) ([]int, error)) (Series[V], error) {
	if err := s.checkKeys(pk, rk); err != nil {
		return Series[V]{}, err
	}
	if err := checkOpID(opID); err != nil {
		return Series[V]{}, err
	}
	given := opID != ""
	if !given {
		// Without an id, a lost response followed by another writer's change would be
		// indistinguishable from a refusal, and the change applied twice.
		opID = autoOpID()
	}
	var out Series[V]
	var unknown error // an attempt whose write may have landed (repo.ErrOutcomeUnknown)
	op := retry.Op{Name: "series update", Resource: s.table.Name(), PartitionKey: pk, RowKey: rk,
		Retryable: func(err error) bool {
			return errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrAlreadyExists)
		}}
	err := retry.Optimistic(ctx, s.conflict, op, func(ctx context.Context, _ int) error {
		e, err := s.table.Get(ctx, pk, rk)
		exists := err == nil
		if errors.Is(err, repo.ErrNotFound) {
			e, err = codec.Entity{PartitionKey: pk, RowKey: rk}, nil
		}
		if err != nil {
			return err
		}
		cur, err := s.decode(&e)
		if err != nil {
			return err
		}
		ops, _ := e.Properties[OpsProperty].(string)
		if opID != "" && slices.Contains(strings.Fields(ops), opID) {
			out = cur // applied already: by an earlier attempt, a retried call or a duplicate
			return nil
		}
		next := slices.Clone(cur.Points)
		changed, err := change(next)
		if err != nil {
			return &fnError{err}
		}
		if len(changed) == 0 && !given {
			out = cur
			return nil
		}
		w := &codec.Entity{PartitionKey: pk, RowKey: rk, ETag: e.ETag, Properties: make(map[string]any, len(changed)+1)}
		for _, i := range changed {
			w.Properties[s.names[i]] = s.stored(next[i])
		}
		if opID != "" {
			w.Properties[OpsProperty] = s.recordOp(ops, opID)
		}
		if exists {
			err = s.table.Update(ctx, w, &repo.UpdateOptions{Mode: repo.Merge})
		} else {
			err = s.table.Insert(ctx, w)
		}
		if errors.Is(err, repo.ErrOutcomeUnknown) {
			done, derr := s.settle(ctx, err, pk, rk, opID, entityETag(&e, exists))
			switch {
			case derr == nil:
				out = done
			case !retry.IsAgain(derr):
				unknown = err
			}
			return derr
		}
		if err != nil {
			return err
		}
		out = Series[V]{PartitionKey: pk, RowKey: rk, Points: next, ETag: w.ETag}
		return nil
	})
	var fe *fnError
	if errors.As(err, &fe) {
		return Series[V]{}, fe.err
	}
	if err != nil && unknown != nil && !errors.Is(err, repo.ErrOutcomeUnknown) {
		// The re-read that would have found the operation id failed: the change may have
		// landed, so this is not a plain failure a caller may retry blindly.
		var ue *repo.OutcomeUnknownError
		errors.As(unknown, &ue)
		return Series[V]{}, &repo.OutcomeUnknownError{Op: "series update", Resource: s.table.Name(), PartitionKey: pk, RowKey: rk, Cause: ue, Err: err}
	}
	return out, err
}

// recordOp appends id to the space-separated ops, keeping the last s.history.
func (s *Store[V]) recordOp(ops, id string) string {
	f := append(strings.Fields(ops), id)
	if len(f) > s.history {
		f = f[len(f)-s.history:]
	}
	return strings.Join(f, " ")
}

// autoOpID returns a fresh random operation id for a call that gave none.
func autoOpID() string {
	var b [9]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "~" + base64.RawURLEncoding.EncodeToString(b[:])
}
