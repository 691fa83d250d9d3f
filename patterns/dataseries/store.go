package dataseries

import (
	"fmt"
	"reflect"
	"strconv"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Number is the type of a series' points: stored as Edm.Int32, Edm.Int64 or Edm.Double.
type Number interface {
	~int32 | ~int64 | ~float64
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
