// Package fanout runs a bounded number of calls at once: the one implementation of
// "parallel with a limit" that repo and the patterns share, with its two rules for errors:
// Do (the first error cancels the rest) and Each (every call runs; the errors are joined).
package fanout

import (
	"context"
	"errors"
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

// Each calls fn(ctx, i) for every i in [0, n), with at most limit calls running at once
// (limit < 1 means 1), like Do, but an error does not stop the other calls: every call
// runs (until ctx is done), and Each returns the errors of all failed calls joined
// (errors.Join), nil if none failed, or ctx's error if ctx ended before every call
// started. It is the rule for independent work whose failures are reported together (drop
// every expired table; repair every partition). Each returns after every started call has
// returned.
func Each(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	if limit < 1 {
		limit = 1
	}
	failed := make([]error, n)
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	started := 0
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		started++
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			failed[i] = fn(ctx, i)
		}(i)
	}
	wg.Wait()
	if started < n {
		failed = append(failed, ctx.Err())
	}
	return errors.Join(failed...)
}
