package migrate

import (
	"context"
	"time"
)

// A page scan is taken before its chunks enter their stage view (a chunk's view waits
// until the job's stage has settled, and a scan must not). A scan that began before the
// job's stage settled may be older than a write made under the previous stage's rules
// (whose deadline ends by T + Refresh + WriteTimeout + ClockSkew), and the writer of that
// write may have stopped before its copy step; so such a scan says nothing about the
// current version, and the chunk reads every old entity. The scan settles an entity only
// when the chunk's view shows the job's stage recorded, and settled, before the scan
// began: then every process followed the job's stage's rules from the scan on.

// scanSettled reports whether a page scan that began at scanAt was taken under stage's
// settled rules, by the view of the chunk that acts on it (taken after the scan). The
// view is the cached one enter has just read: no request.
func (m *Migration[O, N]) scanSettled(ctx context.Context, stage Stage, scanAt time.Time) bool {
	st, err := m.state(ctx)
	if err != nil || st.Stage != stage {
		return false
	}
	return st.Since.IsZero() || !scanAt.Before(st.Since.Add(m.opts.settle()))
}
