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

// TestReaderNeverStepsBackWhenAnAbandonedWriteLandsLate: the request of an application
// write reaches the service, which does not answer before the client gives up on it (a
// loaded store); the application writes again, then a newer version; only then does the
// service apply the abandoned request. The reader through the migration never reads the
// older version after the newer one: in the old layout (DualWrite, CutOver) nor in the
// copy that stands alone (CleanUp, Done). Another-table migration, whose old layout the
// application writes through the migration without a condition of its own.
func TestReaderNeverStepsBackWhenAnAbandonedWriteLandsLate(t *testing.T) {
	t.Parallel()
	for _, stage := range []Stage{DualWrite, CutOver, CleanUp, Done} {
		t.Run(string(stage), func(t *testing.T) {
			t.Parallel()
			f := setup(t, false, true)
			keys, _ := f.planned(t, 10, 1)
			f.advanceTo(t, stage)
			f.settled(t)
			ctx, k := f.b.Ctx, keys[3]
			table := f.src.Name() // the layout the stage's writes put the value in
			if stage == CleanUp || stage == Done {
				table = f.tgt.Name()
			}
			write := func(r *http.Request) bool {
				return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/"+table+"(") && strings.Contains(r.URL.Path, k[1])
			}
			// The first such request is held at the proxy until the test lets it go, past
			// its client's end (the late rule), then forwarded although its client left
			// (the detached pause, which sees the client gone and holds it no more).
			p := f.b.Proxy()
			held, late := make(chan struct{}), make(chan struct{})
			var seen atomic.Int32
			var gone atomic.Bool // the held request passed the late rule
			p.AddRule(faultproxy.Rule{Name: "late", Match: func(r *http.Request) bool {
				if write(r) && seen.Add(1) == 1 {
					close(held)
					<-late
					gone.Store(true)
				}
				return false
			}})
			ps := p.PauseAt("abandoned", func(r *http.Request) bool { return gone.Load() && write(r) }, 1)
			ps.Detach()
			var once sync.Once
			letGo := func() { once.Do(func() { close(late) }) }
			t.Cleanup(func() { letGo(); ps.Release() })

			abandoned, give := context.WithCancel(ctx)
			first := make(chan error, 1)
			go func() {
				first <- f.m.Upsert(abandoned, &Employee{Department: k[0], EmployeeID: k[1], Name: "n" + k[1], Seq: 5})
			}()
			select {
			case <-held:
			case err := <-first:
				t.Fatalf("the write ended (%v) before its request was held", err)
			}
			give()
			if err := <-first; err == nil {
				t.Fatal("the abandoned write succeeded")
			}
			for _, seq := range []int64{5, 6} {
				if err := f.m.Upsert(ctx, &Employee{Department: k[0], EmployeeID: k[1], Name: "n" + k[1], Seq: seq}); err != nil {
					t.Fatalf("write of Seq %d: %v", seq, err)
				}
			}
			if v, err := f.m.Get(ctx, k[0], k[1]); err != nil || v.Seq != 6 {
				t.Fatalf("Get after the writes = Seq %d, %v; want 6", v.Seq, err)
			}
			letGo()
			if err := ps.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if err := p.WaitIdle(ctx); err != nil {
				t.Fatal(err)
			}
			if p.Fired("abandoned") != 1 {
				t.Fatalf("the abandoned request was forwarded %d times, want once", p.Fired("abandoned"))
			}
			v, err := f.m.Get(ctx, k[0], k[1])
			if err != nil || v.Seq < 6 {
				t.Errorf("Get once the abandoned write landed = Seq %d, %v: Seq %d after 6", v.Seq, err, v.Seq)
			}
		})
	}
}
