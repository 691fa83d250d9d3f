package azurite

import (
	"context"
	"errors"
	"io"
	"sync"
)

// ErrClosed is returned by Lazy.Start after Close.
var ErrClosed = errors.New("azurite: the server was stopped for good (Close was called)")

// Lazy is one server per test binary, started by its first user so that tests which need
// no storage run without Azurite, and stopped by Close. S is the server's type: *Server, or
// a public wrapper of it, so that the public test helper and the internal harness share
// this lifecycle. Its methods are safe for concurrent use.
type Lazy[S io.Closer] struct {
	start func(context.Context) (S, error)

	mu      sync.Mutex
	srv     S
	started bool
	err     error
	closed  bool
}

// NewLazy returns a Lazy that calls start on first use. It does nothing else.
func NewLazy[S io.Closer](start func(context.Context) (S, error)) *Lazy[S] {
	return &Lazy[S]{start: start}
}

// Start returns the server, starting it on the first call. A failed start is not retried
// (every later call returns the same error value), except one that failed because ctx
// ended: that was the caller's, not the server's, and the next caller tries again.
//
// Errors: ErrClosed after Close, or the error of start.
func (l *Lazy[S]) Start(ctx context.Context) (S, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		var zero S
		return zero, ErrClosed
	case l.started || l.err != nil:
		return l.srv, l.err
	}
	srv, err := l.start(ctx)
	if err != nil && ctx.Err() != nil {
		return srv, err
	}
	l.srv, l.err, l.started = srv, err, err == nil
	return srv, err
}

// Started reports whether a server is running (a caller asked for it and it started).
func (l *Lazy[S]) Started() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.started && !l.closed
}

// Close stops the server if one was started; later calls of Start fail with ErrClosed.
// It returns the server's Close error.
func (l *Lazy[S]) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if !l.started {
		return nil
	}
	return l.srv.Close()
}
