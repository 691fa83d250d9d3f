package indexentity

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
)

// TestEventualBackfillCancelledWhileAListIsThrottledReturns: an Eventual backfill whose
// entities write several lists on retry.Schedule, one list's partition answering every
// write 503 ServerBusy (its writes retried under the store's default policy, which
// would wait long), another's refusing its write (403). The refusal starts no new call
// and the throttled calls keep retrying under the caller's context; cancelled by the
// caller, the backfill returns ctx's error, not waiting for the throttled partition to
// recover or the retry policy to give up.
func TestEventualBackfillCancelledWhileAListIsThrottledReturns(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	const pk = "Dept"
	var items []*Employee
	for i := range 6 {
		last := "Hot"
		if i == 5 {
			last = "Refused"
		}
		items = append(items, emp(pk, fmt.Sprintf("%06d", i), last))
	}
	if err := b.emps.BulkWrite(b.Ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	st := must(repo.New[codec.Entity](b.Clients.Tables, b.NewTableName(), nil)) // the default retry policy
	s, err := NewTableStore(st, "LastName", nil)
	if err != nil {
		t.Fatal(err)
	}
	ix := b.eventual(s, b.queue())
	p := b.tableProxy()
	busy, refused := make(chan struct{}), make(chan struct{})
	var nBusy, nRefused atomic.Int32
	p.AddRule(faultproxy.Rule{Name: "busy", Action: faultproxy.Respond(http.StatusServiceUnavailable, "ServerBusy"),
		Match: func(r *http.Request) bool {
			if !batchWith("Hot")(r) {
				return false
			}
			if nBusy.Add(1) == 3 {
				close(busy)
			}
			return true
		}})
	p.AddRule(faultproxy.Rule{Name: "refused", Action: faultproxy.Respond(http.StatusForbidden, "AuthorizationFailure"),
		Match: func(r *http.Request) bool {
			if !batchWith("Refused")(r) {
				return false
			}
			if nRefused.Add(1) == 1 {
				close(refused)
			}
			return true
		}})
	ctx, cancel := context.WithCancel(b.Ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := ix.BackfillPartition(ctx, pk, nil)
		done <- err
	}()
	for _, reached := range []chan struct{}{busy, refused} {
		select {
		case <-reached:
		case err := <-done:
			t.Fatalf("the backfill ended (%v) before the throttled list was retried and the other refused", err)
		}
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("backfill cancelled while throttled, one list refused, succeeded")
	}
}
