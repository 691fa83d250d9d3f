package repo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"iter"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// MaxPageSize is the most entities the service returns in one page.
const MaxPageSize = 1000

// Query describes a query of a table. The zero Query reads the whole table (a table scan:
// the slowest shape the guide describes; prefer a filter on PartitionKey).
type Query struct {
	// Filter selects entities; build it with package filter so that values can never change
	// its structure. The zero Expr selects everything. Table[T] checks it against T's
	// schema before sending anything: a property T does not have (a misspelled name) and a
	// value whose EDM type differs from the type T stores the property with (a string
	// compared with a time.Time field, an int with an int64 one) are refused with an
	// *InvalidInputError naming the property, since either would silently match nothing.
	// A projection (Project) is checked against the type it was projected from. Types with
	// an extra field (codec.Entity) accept any name; QueryFunc checks nothing.
	Filter filter.Expr
	// Select lists the stored property names to return ($select), checked against T's
	// schema like Filter. nil returns every property, or the projection's properties for a
	// table from Project.
	Select []string
	// Top is the most entities the query returns in all (0: no limit). Each request asks
	// for at most what is still wanted, so "the newest 10" is one request of $top=10.
	Top int
	// PageSize is the most entities per request, at most MaxPageSize (0: MaxPageSize).
	PageSize int
	// Token resumes a query where an earlier Page ended (Page.Token). It is only valid
	// with the same Filter.
	Token string
	// FullMetadata asks the service to annotate the type of every property. Typed values
	// do not need it (they decode by their fields' types); types with an extra map and
	// dynamic entities (codec.Entity) get it always, to tell a whole Edm.Double from an
	// Edm.Int32. The real service annotates doubles then; Azurite does not.
	FullMetadata bool
}

func (q *Query) validate() error {
	if err := q.Filter.Err(); err != nil {
		return err
	}
	if q.Top < 0 {
		return errs.Invalid("Query.Top", "must not be negative, got %d", q.Top)
	}
	if q.PageSize < 0 || q.PageSize > MaxPageSize {
		return errs.TooLarge("Query.PageSize", "must be between 0 (default) and the service's page size", q.PageSize, MaxPageSize)
	}
	for _, s := range q.Select {
		if strings.ContainsAny(s, ", ") || s == "" {
			return errs.Invalid("Query.Select", "property name %q is not a single name", s)
		}
	}
	return nil
}

// Page is one page of results.
type Page[T any] struct {
	// Items are the page's entities. A page may be short or even empty and still not be
	// the last: the service ends a page after 1,000 entities, 5 seconds, or a partition
	// boundary.
	Items []T
	// Token resumes the query after this page, in this process or another (pass it as
	// Query.Token); "" when the query is complete. It is opaque, URL-safe and contains
	// only the service's continuation keys.
	Token string
}

// Pager reads a query one page at a time. It does no I/O until Next is called.
type Pager[T any] struct {
	src    source
	q      Query
	decode func(ctx context.Context, data []byte, v *T) error
	err    error
	done   bool
	next   continuation
	count  int
}

// source is what a pager needs of its table, whatever the type it decodes into.
type source struct {
	client *aztables.Client
	name   string
	sel    []string // the projection's $select, nil for all properties
	retry  retry.Policy
	// full asks for full metadata: T keeps unmapped properties (an extra map, a dynamic
	// entity), typed by their annotations, and the service leaves a whole Edm.Double
	// unannotated under minimal metadata.
	full bool
	// track remembers the write histories of the entities read (Options.TrackWrites).
	track *tracker
}

type continuation struct {
	PK string `json:"pk"`
	RK string `json:"rk,omitempty"`
}

func (c continuation) empty() bool { return c.PK == "" && c.RK == "" }

func encodeToken(c continuation) string {
	if c.empty() {
		return ""
	}
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(s string) (continuation, error) {
	var c continuation
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.empty() {
		return continuation{}, errs.Invalid("Query.Token", "is not a token returned by Page.Token")
	}
	return c, nil
}

// Pages returns a pager over q. Errors in q are reported by the first Next.
func (t *Table[T]) Pages(q Query) *Pager[T] {
	p := newPager(t, q, t.codec.DecodeContext)
	if p.err == nil && t.schema != nil {
		p.err = t.schema(q)
	}
	return p
}

func newPager[T, V any](t *Table[T], q Query, decode func(ctx context.Context, data []byte, v *V) error) *Pager[V] {
	src := source{client: t.client, name: t.name, sel: t.sel, retry: t.opts.Retry, full: t.codec.HasExtra(), track: t.track}
	p := &Pager[V]{src: src, q: q, decode: decode}
	if p.err = q.validate(); p.err == nil && q.Token != "" {
		p.next, p.err = decodeToken(q.Token)
	}
	return p
}

// More reports whether Next may return more entities.
func (p *Pager[T]) More() bool { return p.err != nil || !p.done }

// Next reads the next page. After the last page it returns an empty Page and More is false.
//
// Errors: ErrInvalidInput (the query; nothing sent), ErrNotFound (no such table),
// ErrTransient, *Error.
func (p *Pager[T]) Next(ctx context.Context) (Page[T], error) {
	if p.err != nil {
		err := p.err
		p.err, p.done = nil, true
		return Page[T]{}, err
	}
	if p.done {
		return Page[T]{}, nil
	}
	t := p.src
	opts := &aztables.ListEntitiesOptions{}
	if p.q.FullMetadata || t.full {
		full := aztables.MetadataFormatFull
		opts.Format = &full
	}
	if f := p.q.Filter.String(); f != "" {
		opts.Filter = &f
	}
	sel := p.q.Select
	if sel == nil {
		sel = t.sel
	}
	if len(sel) > 0 && t.track != nil {
		// A tracked table learns the history of every version it reads, projections too,
		// so that a write built on a projected read carries it forward.
		sel = append(append(sel[:len(sel):len(sel)], "PartitionKey", "RowKey"), t.track.prop)
	}
	if len(sel) > 0 {
		s := strings.Join(sel, ",")
		opts.Select = &s
	}
	size := p.q.PageSize
	if size == 0 {
		size = MaxPageSize
	}
	if p.q.Top > 0 && p.q.Top-p.count < size {
		size = p.q.Top - p.count
	}
	top := int32(size)
	opts.Top = &top // never 0: aztables' pager loops forever on Top 0
	if !p.next.empty() {
		opts.NextPartitionKey = &p.next.PK
		if p.next.RK != "" {
			opts.NextRowKey = &p.next.RK
		}
	}
	var resp aztables.ListEntitiesResponse
	err := retry.Do(ctx, t.retry, retry.Op{Name: "query", Resource: t.name}, func(ctx context.Context, _ int) error {
		var err error
		resp, err = t.client.NewListEntitiesPager(opts).NextPage(ctx)
		return errs.Wrap(err, "query", t.name, "", "")
	})
	if err != nil {
		return Page[T]{}, err
	}
	page := Page[T]{Items: make([]T, len(resp.Entities))}
	for i, raw := range resp.Entities {
		if err := p.decode(ctx, raw, &page.Items[i]); err != nil {
			return Page[T]{}, err
		}
		if t.track != nil {
			t.track.observe(raw, "")
		}
	}
	p.count += len(page.Items)
	p.next = continuation{}
	if resp.NextPartitionKey != nil {
		p.next.PK = *resp.NextPartitionKey
	}
	if resp.NextRowKey != nil {
		p.next.RK = *resp.NextRowKey
	}
	if p.next.empty() || (p.q.Top > 0 && p.count >= p.q.Top) {
		p.done = true
	} else {
		page.Token = encodeToken(p.next)
	}
	return page, nil
}

// Query returns the entities matching q, following continuation tokens across pages
// (short and empty pages included). Iteration stops at the first error, which is yielded
// with the zero T. Breaking out of the loop stops the query.
//
// Errors: as Pager.Next.
func (t *Table[T]) Query(ctx context.Context, q Query) iter.Seq2[T, error] {
	return pages(ctx, t.Pages(q))
}

// pages yields the entities of every page of p, and stops at the first error.
func pages[V any](ctx context.Context, p *Pager[V]) iter.Seq2[V, error] {
	return func(yield func(V, error) bool) {
		for p.More() {
			page, err := p.Next(ctx)
			if err != nil {
				var zero V
				yield(zero, err)
				return
			}
			for _, v := range page.Items {
				if !yield(v, nil) {
					return
				}
			}
		}
	}
}

// QueryFunc runs q on t's table like Query, but decodes each entity with decode instead of
// T's codec: for a table that holds entities of several types (decode is then
// codec.Registry.Decode). Paging, Top and tokens work as in Query; decode receives one
// entity's JSON as the service returns it, without the write-tracking property of a
// tracked table (see GetFunc).
//
// Errors: as Pager.Next, and decode's.
func QueryFunc[V, T any](ctx context.Context, t *Table[T], q Query, decode func(data []byte) (V, error)) iter.Seq2[V, error] {
	return pages(ctx, newPager(t, q, func(_ context.Context, data []byte, v *V) error {
		data, err := t.hideHistory(data)
		if err != nil {
			return err
		}
		*v, err = decode(data)
		return err
	}))
}

// Collect runs q and returns all its entities in a slice.
//
// Errors: as Pager.Next.
func (t *Table[T]) Collect(ctx context.Context, q Query) ([]T, error) {
	var out []T
	for v, err := range t.Query(ctx, q) {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}
