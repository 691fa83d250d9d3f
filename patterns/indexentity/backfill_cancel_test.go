package indexentity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// TestBackfillCancelledByItsCallerReturnsWithoutWaitingForAHeldWrite: the calls of a
// backfill page run under the caller's context; cancelled by the caller mid-page while
// one entity's transaction is held at the proxy (a store that does not answer), the
// backfill returns ctx's error, the held transaction abandoned, without waiting for the
// store to answer (the proxy would hold it until the test ends). SamePartition and
// Eventual (TableStore).
func TestBackfillCancelledByItsCallerReturnsWithoutWaitingForAHeldWrite(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"SamePartition", "Eventual"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			const pk, n = "Dept", 8
			var items []*Employee
			for i := range n {
				items = append(items, emp(pk, fmt.Sprintf("%06d", i), fmt.Sprintf("Name%02d", i)))
			}
			if err := b.emps.BulkWrite(b.Ctx, items, nil); err != nil {
				t.Fatal(err)
			}
			backfill, match := b.samePartition(nil).BackfillPartition, batchFor("000003")
			if kind == "Eventual" {
				// The store's transaction of 000003 writes its value's list.
				backfill, match = b.eventual(b.tableStore(0), b.queue()).BackfillPartition, batchWith("Name03")
			}
			p := b.tableProxy()
			held := p.PauseAt("held", match, 1)
			t.Cleanup(held.Release)
			ctx, cancel := context.WithCancel(b.Ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := backfill(ctx, pk, nil)
				done <- err
			}()
			select {
			case <-held.Reached():
			case err := <-done:
				t.Fatalf("the backfill ended (%v) before 000003's transaction was held", err)
			}
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("backfill cancelled by its caller = %v, want context.Canceled", err)
			}
		})
	}
}

// batchWith selects the transactions whose body holds s.
func batchWith(s string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		if !faultproxy.IsBatch(r) {
			return false
		}
		body, _ := io.ReadAll(r.Body)
		return bytes.Contains(body, []byte(s))
	}
}
