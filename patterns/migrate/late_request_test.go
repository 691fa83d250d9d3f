package migrate

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// lateRequest holds at the fault proxy the first request that matches, past its client's
// end, and forwards it when let go although its client left: an abandoned request the
// service applies after later ones.
type lateRequest struct {
	p     *faultproxy.Proxy
	ps    *faultproxy.Pause
	held  chan struct{}
	late  chan struct{}
	once  sync.Once
	match func(*http.Request) bool
}

// holdFirst holds the first request that match accepts (the late rule), then forwards it
// when let go (the detached pause, which sees the client gone and holds it no more).
func holdFirst(t testing.TB, p *faultproxy.Proxy, match func(*http.Request) bool) *lateRequest {
	t.Helper()
	l := &lateRequest{p: p, held: make(chan struct{}), late: make(chan struct{}), match: match}
	var seen atomic.Int32
	var gone atomic.Bool // the held request passed the late rule
	p.AddRule(faultproxy.Rule{Name: "late", Match: func(r *http.Request) bool {
		if match(r) && seen.Add(1) == 1 {
			close(l.held)
			<-l.late
			gone.Store(true)
		}
		return false
	}})
	l.ps = p.PauseAt("abandoned", func(r *http.Request) bool { return gone.Load() && match(r) }, 1)
	l.ps.Detach()
	t.Cleanup(func() { l.letGo(); l.ps.Release() })
	return l
}

func (l *lateRequest) letGo() { l.once.Do(func() { close(l.late) }) }

// abandon runs write until its request is held, then gives it up: the write must fail.
func (l *lateRequest) abandon(t testing.TB, ctx context.Context, write func(context.Context) error) {
	t.Helper()
	abandoned, give := context.WithCancel(ctx)
	defer give()
	first := make(chan error, 1)
	go func() { first <- write(abandoned) }()
	select {
	case <-l.held:
	case err := <-first:
		t.Fatalf("the write ended (%v) before its request was held", err)
	}
	give()
	if err := <-first; err == nil {
		t.Fatal("the abandoned write succeeded")
	}
}

// land lets the held request go and waits until the service answered it.
func (l *lateRequest) land(t testing.TB, ctx context.Context) {
	t.Helper()
	l.letGo()
	if err := l.ps.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.p.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if n := l.p.Fired("abandoned"); n != 1 {
		t.Fatalf("the abandoned request was forwarded %d times, want once", n)
	}
}

// entityWrite matches a write (PUT) of the entity with RowKey rk in table.
func entityWrite(table, rk string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/"+table+"(") && strings.Contains(r.URL.Path, rk)
	}
}
