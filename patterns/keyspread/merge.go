package keyspread

import (
	"container/heap"
	"context"
	"iter"
	"sync"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

func fail[T any](err error) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		yield(zero, err)
	}
}

// page is one page of a bucket's query, or its error.
type page[T any] struct {
	items []T
	err   error
}

// cursor is the merge's position in one bucket.
type cursor[T any] struct {
	bucket int
	items  []T
	i      int
	pk, rk string
	pages  <-chan page[T]
}

// merge runs the queries in parallel, one goroutine per query fetching its pages ahead
// (at most Concurrency requests at once), and merges their results by key, smallest
// first; ties go to the lower bucket.
func merge[T any](ctx context.Context, t *repo.Table[T], qs []repo.Query, o ReadOptions, key func(*T) (string, string)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		conc := o.Concurrency
		if conc == 0 {
			conc = DefaultConcurrency
		}
		if conc < 1 || o.Top < 0 {
			yield(zero, errs.Invalid("ReadOptions", "Concurrency must be at least 1 and Top not negative"))
			return
		}
		for _, q := range qs {
			if err := q.Filter.Err(); err != nil {
				yield(zero, err)
				return
			}
		}
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer func() { cancel(); wg.Wait() }()
		sem := make(chan struct{}, conc)
		h := &cursorHeap[T]{}
		cursors := make([]*cursor[T], len(qs))
		for i, q := range qs {
			ch := make(chan page[T], 1)
			cursors[i] = &cursor[T]{bucket: i, pages: ch}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer close(ch)
				fetch(ctx, t.Pages(q), sem, ch)
			}()
		}
		// advance moves c to its next entity, waiting for its next page when needed; it
		// reports false (with an error or none) when c is done.
		advance := func(c *cursor[T]) (bool, error) {
			c.i++
			for c.i >= len(c.items) {
				p, ok := <-c.pages
				if !ok {
					return false, nil
				}
				if p.err != nil {
					return false, p.err
				}
				c.items, c.i = p.items, 0
			}
			c.pk, c.rk = key(&c.items[c.i])
			return true, nil
		}
		for _, c := range cursors {
			c.i = -1
			ok, err := advance(c)
			if err != nil {
				yield(zero, err)
				return
			}
			if ok {
				heap.Push(h, c)
			}
		}
		n := 0
		for h.Len() > 0 {
			c := (*h)[0]
			if !yield(c.items[c.i], nil) {
				return
			}
			if n++; o.Top > 0 && n >= o.Top {
				return
			}
			ok, err := advance(c)
			if err != nil {
				yield(zero, err)
				return
			}
			if ok {
				heap.Fix(h, 0)
			} else {
				heap.Pop(h)
			}
		}
	}
}

// fetch sends the pages of one query to ch, holding a slot of sem during each request.
func fetch[T any](ctx context.Context, p *repo.Pager[T], sem chan struct{}, ch chan<- page[T]) {
	for p.More() {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		pg, err := p.Next(ctx)
		<-sem
		var out page[T]
		if err != nil {
			out.err = err
		} else if len(pg.Items) == 0 {
			continue // a short or empty page may still carry a continuation
		} else {
			out.items = pg.Items
		}
		select {
		case ch <- out:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

type cursorHeap[T any] []*cursor[T]

func (h cursorHeap[T]) Len() int { return len(h) }
func (h cursorHeap[T]) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.pk != b.pk {
		return a.pk < b.pk
	}
	if a.rk != b.rk {
		return a.rk < b.rk
	}
	return a.bucket < b.bucket
}
func (h cursorHeap[T]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap[T]) Push(x any)   { *h = append(*h, x.(*cursor[T])) }
func (h *cursorHeap[T]) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
