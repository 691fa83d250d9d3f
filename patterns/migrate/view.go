package migrate

import (
	"context"
	"fmt"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// state returns the state record as this process sees it: the cached one while it is
// younger than Options.Refresh (its age counted from when its read began), else a fresh
// read.
func (m *Migration[O, N]) state(ctx context.Context) (State, error) {
	m.mu.Lock()
	st, fetched := m.view, m.fetched
	m.mu.Unlock()
	if !fetched.IsZero() && time.Since(fetched) < m.opts.Refresh {
		return st, nil
	}
	start := time.Now()
	st, err := m.load(ctx)
	if m.seams.stateRead != nil {
		m.seams.stateRead()
	}
	if err != nil {
		return State{}, err
	}
	m.remember(st, start)
	return m.cached(), nil
}

// remember caches st read at fetched, unless the cache holds a later read.
func (m *Migration[O, N]) remember(st State, fetched time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if fetched.After(m.fetched) {
		m.view, m.fetched = st, fetched
	}
}

func (m *Migration[O, N]) cached() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.view
}

// waitSettled waits until st's transition has settled: Options.Refresh + WriteTimeout +
// 3 x ClockSkew after the service's time of the transition.
func (m *Migration[O, N]) waitSettled(ctx context.Context, st State) error {
	d := time.Until(st.Since.Add(m.opts.settle()))
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// orPlanned is the stage of rules before a migration is planned: Planned's (old only).
func orPlanned(s Stage) Stage {
	if s == "" || s == Aborted {
		return Planned
	}
	return s
}

func notPlanned(st State, err error) error {
	if err != nil || st.Stage != "" {
		return err
	}
	return fmt.Errorf("migrate: source %s has no migration: %w", st.Source, errs.ErrNotFound)
}

func present(v version, err error, pk, rk string) error {
	if err != nil || v.found {
		return err
	}
	return fmt.Errorf("migrate: (%s, %s): %w", pk, rk, errs.ErrNotFound)
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Status reads the state record (fresh, not the cached view).
//
// Errors: ErrInvalidInput (a record that does not validate), ErrInProgress (another
// migration's), ErrTransient, *repo.Error.
func (m *Migration[O, N]) Status(ctx context.Context) (State, error) { return m.load(ctx) }

// WaitSettled waits until the current stage has settled: every process follows it, and
// its range jobs act.
//
// Errors: as Status; ctx's error.
func (m *Migration[O, N]) WaitSettled(ctx context.Context) (State, error) {
	st, err := m.load(ctx)
	if err != nil {
		return st, err
	}
	return st, m.waitSettled(ctx, st)
}
