package periodtable

import (
	"context"
	"errors"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// QueryOptions configures Query. nil means the zero value.
type QueryOptions struct {
	// Descending returns the newest period's entities first. By default the oldest period
	// comes first. Within a period, entities come in the table's (PartitionKey, RowKey)
	// order either way.
	Descending bool
}

// pageBuffer is how many pages a table reader may hold ahead of the consumer: enough to
// keep the requests flowing, few enough to bound memory to Concurrency × 2 pages.
const pageBuffer = 2

type pageResult[T any] struct {
	items []T
	err   error
}

// Query returns the entities of the period tables that overlap [from, to) and match q,
// period after period (oldest first, or newest first with Descending). It lists the tables
// (one request), then reads up to Options.Concurrency tables at once, each ahead of the
// consumer by at most two pages, and yields their entities in period order: a merge of
// already ordered, disjoint streams, so nothing is sorted in memory.
//
// In the tables at the ends of the range, whose periods extend beyond it, q.Filter is
// combined with time property >= from and time property < to; inside the range every entity
// of a table is in it by construction. q.Top limits the total. A zero from or to leaves that
// side open. q.Token is refused: a fan-out cannot resume inside one table; resume with a
// later from instead. A period without a table (no writes) is simply empty.
//
// Errors (yielded, after which iteration stops): errs.ErrInvalidInput (q; nothing sent),
// errs.ErrTransient, *errs.ServiceError. Breaking out of the loop cancels the reads in flight.
func (p *Tables[T]) Query(ctx context.Context, from, to time.Time, q repo.Query, opts *QueryOptions) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		if err := p.checkQuery(from, to, q); err != nil {
			yield(zero, err)
			return
		}
		tables, err := p.List(ctx, &ListOptions{From: from, To: to})
		if err != nil {
			yield(zero, err)
			return
		}
		if opts != nil && opts.Descending {
			slices.Reverse(tables)
		}
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()

		streams := make([]chan pageResult[T], len(tables))
		started := 0
		start := func() {
			ch := make(chan pageResult[T], pageBuffer)
			streams[started] = ch
			t, tq := tables[started], p.tableQuery(tables[started], from, to, q)
			started++
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer close(ch)
				p.readTable(ctx, t, tq, ch)
			}()
		}
		count := 0
		for i := range tables {
			for started < len(tables) && started < i+p.opts.Concurrency {
				start()
			}
			for r := range streams[i] {
				if r.err != nil {
					yield(zero, r.err)
					return
				}
				for _, v := range r.items {
					if !yield(v, nil) {
						return
					}
					if count++; q.Top > 0 && count >= q.Top {
						return
					}
				}
			}
			// A stream also ends, without an error, when the caller's ctx ends.
			if err := ctx.Err(); err != nil {
				yield(zero, err)
				return
			}
		}
	}
}

func (p *Tables[T]) checkQuery(from, to time.Time, q repo.Query) error {
	if q.Token != "" {
		return errs.Invalid("Query.Token", "a query across period tables cannot resume inside one table: resume with a later from")
	}
	if !from.IsZero() && !to.IsZero() && !from.Before(to) {
		return errs.Invalid("range", "from (%v) must be before to (%v)", from, to)
	}
	if q.Top < 0 {
		return errs.Invalid("Query.Top", "must not be negative, got %d", q.Top)
	}
	// The end tables get up to two more comparisons: check the worst case now.
	f := filter.And(q.Filter, filter.Ge(p.timeProp, time.Unix(0, 0)), filter.Lt(p.timeProp, time.Unix(0, 0)))
	return f.Err()
}

// tableQuery is q for one table: with the time bounds where the table's period sticks out
// of [from, to).
func (p *Tables[T]) tableQuery(t Table, from, to time.Time, q repo.Query) repo.Query {
	f := q.Filter
	if !from.IsZero() && t.Start.Before(from) {
		f = filter.And(f, filter.Ge(p.timeProp, from))
	}
	if !to.IsZero() && t.End.After(to) {
		f = filter.And(f, filter.Lt(p.timeProp, to))
	}
	q.Filter = f
	return q
}

// readTable sends the pages of one table to ch until the table is read, an error, or ctx
// ends. A table that disappeared since the listing (dropped) is empty.
func (p *Tables[T]) readTable(ctx context.Context, t Table, q repo.Query, ch chan<- pageResult[T]) {
	pager := p.repoTable(t.Name).Pages(q)
	for pager.More() {
		page, err := pager.Next(ctx)
		if errors.Is(err, repo.ErrNotFound) || errors.Is(err, repo.ErrTableBeingDeleted) {
			return
		}
		if err != nil && ctx.Err() != nil {
			return // the consumer stopped
		}
		select {
		case ch <- pageResult[T]{items: page.Items, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}
