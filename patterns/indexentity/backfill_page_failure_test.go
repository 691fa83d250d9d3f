package indexentity

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// BackfillPartition runs a page on each: "the first error stops the calls not yet
// started". A page of six unlisted entities of one partition, two at a time: entity
// 000000's transaction is held at the proxy (its client gives up when the page stops,
// so it never reaches the service), entity 000001's is refused (403). The four others
// never start: nothing is listed, no checkpoint is stored or returned past the page,
// and the error names no value.
func TestSamePartitionBackfillPageStopsAtTheFirstFailure(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	const pk, n = "Dept", 6
	var items []*Employee
	for i := range n {
		items = append(items, emp(pk, fmt.Sprintf("%06d", i), fmt.Sprintf("Secret%02d", i)))
	}
	if err := b.emps.BulkWrite(b.Ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	ix := b.samePartition(nil)
	p := b.tableProxy()
	var held *faultproxy.Pause
	p.AddRule(faultproxy.Rule{Name: "refuse 000001", Times: 1, Action: faultproxy.Respond(http.StatusForbidden, "AuthorizationFailure"),
		Match: func(r *http.Request) bool {
			if !batchFor("000001")(r) {
				return false
			}
			select {
			case <-held.Reached():
			case <-r.Context().Done():
			}
			return true
		}})
	held = p.PauseAt("hold 000000", batchFor("000000"), 1)
	t.Cleanup(held.Release)
	var stored []Checkpoint
	cp, err := ix.BackfillPartition(b.Ctx, pk, &BackfillOptions{
		Checkpoint: func(_ context.Context, cp Checkpoint) error { stored = append(stored, cp); return nil }})
	if err == nil {
		t.Fatal("the backfill succeeded although 000001's transaction was refused")
	}
	if strings.Contains(err.Error(), "Secret") {
		t.Fatalf("a value in the error: %v", err)
	}
	if cp.After != "" || cp.Done || len(stored) != 0 {
		t.Fatalf("checkpoint %+v returned, %+v stored, past the entity that failed", cp, stored)
	}
	if err := p.WaitIdle(b.Ctx); err != nil {
		t.Fatal(err)
	}
	if pages := b.indexPages(ix, pk); len(pages) != 0 {
		t.Fatalf("%d index entities written, want none: the calls not yet started ran", len(pages))
	}
	r, err := ix.Verify(b.Ctx, pk, nil)
	if err != nil || r.Missing != n {
		t.Fatalf("verify: %+v %v; want all %d missing", r, err, n)
	}
}
