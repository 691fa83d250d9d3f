package indexentity

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// BackfillPartition runs a page on fixEach: "the first failure starts no new call; the
// calls already running finish". A page of six unlisted entities of one partition, two
// at a time: entity 000000's transaction is held at the proxy, entity 000001's is
// refused (403), and 000000's is released once the failure is recorded. The four others
// never send a transaction; 000000 is listed and counted in Checkpoint.Written; no
// checkpoint is stored or returned past the page, and the error names no value.
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
	var sentMu sync.Mutex
	var sent []string // the entities whose transaction reached the proxy
	p.AddRule(faultproxy.Rule{Name: "record", Match: func(r *http.Request) bool {
		if !faultproxy.IsBatch(r) {
			return false
		}
		body, _ := io.ReadAll(r.Body)
		for _, e := range items {
			if bytes.Contains(body, []byte("RowKey='"+e.EmployeeID+"'")) {
				sentMu.Lock()
				sent = append(sent, e.EmployeeID)
				sentMu.Unlock()
			}
		}
		return false // recorded, never fired
	}})
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
	ix.seams.stopped = held.Release
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
	if cp.Written != 1 {
		t.Fatalf("checkpoint counts %d written, want 1: 000000's transaction, left running, landed", cp.Written)
	}
	if err := p.WaitIdle(b.Ctx); err != nil {
		t.Fatal(err)
	}
	sentMu.Lock()
	got := slices.Sorted(slices.Values(sent))
	sentMu.Unlock()
	if !slices.Equal(got, []string{"000000", "000001"}) {
		t.Fatalf("transactions of %v sent, want only the running [000000 000001]: the calls not yet started ran", got)
	}
	if ids, err := ix.IDs(b.Ctx, pk, "Secret00"); err != nil || !slices.Equal(ids, []string{"000000"}) {
		t.Fatalf("000000's value lists %v (%v), want [000000]", ids, err)
	}
	if pages := b.indexPages(ix, pk); len(pages) != 1 {
		t.Fatalf("%d index entities written, want 000000's only", len(pages))
	}
	r, err := ix.Verify(b.Ctx, pk, nil)
	if err != nil || r.Missing != n-1 {
		t.Fatalf("verify: %+v %v; want all but 000000 missing", r, err)
	}
}
