package consistency

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// A hot entity with companions leaves its delete transaction (written after its copy),
// and the response of the transaction sent again without it is lost after it committed:
// the batch starts over from fresh reads, the others stay moved with their companions'
// copies gone, the hot entity stays in the source with its companion copy and is
// reported changed, and the report counts the entities that the lost transaction moved.
func TestRangeHotEntityThenLostDeleteResponseLeavesOnlyTheHotEntity(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	sib := &sibling{tbl: b.current}
	a, err := New(b.clients, &Options{Retry: fastRetry(), Companions: map[string][]Companion{b.current.Name(): {sib}}})
	if err != nil {
		t.Fatal(err)
	}
	var items []*codec.Entity
	for n := range 6 {
		e := rangeEntity("Sales", n, 1)
		items = append(items, e, &codec.Entity{PartitionKey: "Sales", RowKey: "copy-" + e.RowKey, Properties: map[string]any{"Of": e.RowKey}})
	}
	if err := b.current.BulkWrite(b.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	hot := rangeEntity("Sales", 2, 1)
	var mu sync.Mutex
	a.seams.step = func(job, step string) error {
		if job != KindArchiveRange || step != "copied" {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		hot.Properties["Version"] = hot.Properties["Version"].(int32) + 1
		return b.current.Upsert(b.ctx, hot, &repo.UpsertOptions{Mode: repo.Replace})
	}
	var deletes atomic.Int32
	ps.Table.AddRule(faultproxy.Rule{Name: "lost", Action: faultproxy.DropAfterForward(), Match: func(r *http.Request) bool {
		if !faultproxy.IsBatch(r) {
			return false
		}
		body, _ := io.ReadAll(r.Body)
		return strings.Contains(string(body), "DELETE ") && deletes.Add(1) == 2
	}})
	rep, err := a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", RowKeyFrom: "0", RowKeyTo: "1", TargetTable: b.archive.Name()})
	if err != nil {
		t.Fatalf("%+v %v", rep, err)
	}
	if ps.Table.Fired("lost") != 1 {
		t.Fatalf("the rule fired %d times", ps.Table.Fired("lost"))
	}
	left, err := b.current.Collect(b.ctx, repo.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range left {
		keys = append(keys, e.RowKey)
	}
	if want := fmt.Sprint([]string{hot.RowKey, "copy-" + hot.RowKey}); fmt.Sprint(keys) != want {
		t.Fatalf("left in the source %v, want %s", keys, want)
	}
	if len(rep.Changed) != 1 || rep.Changed[0].RowKey != hot.RowKey {
		t.Fatalf("Changed %v, want %s", rep.Changed, hot.RowKey)
	}
	if rep.Moved != 5 {
		t.Fatalf("the report says %d moved, want the 5 that the lost transaction deleted: %+v", rep.Moved, rep)
	}
}
