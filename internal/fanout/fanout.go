// Package fanout runs a bounded number of calls at once: the one implementation of
// "parallel with a limit, first error cancels the rest" that repo and the patterns share.
package fanout

import (
	"context"
	"sync"
)

// Do calls fn(ctx, i) for every i in [0, n), with at most limit calls running at once
// (limit < 1 means 1). The first error cancels the context of the calls still running or
// not yet started, and is returned; nil if every call succeeded. Do returns after every
// started call has returned.
func Do(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	if limit < 1 {
		limit = 1
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				cancel(err)
			}
		}(i)
	}
	wg.Wait()
	return context.Cause(ctx)
}
