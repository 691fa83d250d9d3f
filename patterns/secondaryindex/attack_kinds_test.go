package secondaryindex_test

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// "Duplicated, reordered and replayed messages all reconcile the current state", with
// forged messages among them: four more messages for one entity in flight together with
// the two of its writes, the entity changed after the first write; and forged messages of
// the index's kind (a PartitionKey inside the index key space, keys that are not keys, a
// payload of another shape). The index must end exact and the forged messages poisoned,
// nothing else.
func TestInterReplayedAndForgedMessagesInFlightTogether(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmailLower)
	e := iemp(61, "Kai", "Kind", "Kai@One.com")
	if err := x.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	first := b.TakeMessages(q)
	e.Email = "kai@TWO.com"
	if err := x.Update(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	second := b.TakeMessages(q)
	if len(first) != 1 || len(second) != 1 || first[0].Kind != x.Kind() {
		t.Fatalf("messages %+v %+v", first, second)
	}
	ref := secondaryindex.Ref{PartitionKey: "Sales", RowKey: e.RowKey}
	for range 4 {
		if _, err := queueworker.Enqueue(b.Ctx, q, x.Kind(), "", ref, nil); err != nil {
			t.Fatal(err)
		}
	}
	forged := []any{
		secondaryindex.Ref{PartitionKey: "email_Sales", RowKey: interKey("kai@two.com", e.RowKey)},
		secondaryindex.Ref{PartitionKey: "Sales", RowKey: "a/b"},
		secondaryindex.Ref{PartitionKey: "", RowKey: e.RowKey},
		"not a ref",
	}
	for _, f := range forged {
		if _, err := queueworker.Enqueue(b.Ctx, q, x.Kind(), "", f, nil); err != nil {
			t.Fatal(err)
		}
	}
	w := b.worker(t, queue, x)
	testbed.Drain(t, w)
	st := w.Stats()
	t.Logf("stats %+v", st)
	if st.Poisoned != int64(len(forged)) {
		t.Errorf("poisoned %d, want the %d forged messages", st.Poisoned, len(forged))
	}
	got := b.rows(t, "email_Sales")
	want := map[string]bool{"!" + e.RowKey: true, interKey("kai@two.com", e.RowKey): true}
	if len(got) != 2 || !want[got[0]] || !want[got[1]] {
		t.Fatalf("index partition %q, want the ref and the copy of kai@two.com only", got)
	}
	if v, err := x.Lookup(b.Ctx, "Sales", "email", "KAI@two.COM"); err != nil || v.RowKey != e.RowKey {
		t.Fatalf("Lookup = %+v, %v", v, err)
	}
	if p, err := x.Get(b.Ctx, "Sales", e.RowKey); err != nil || p.Email != "kai@TWO.com" {
		t.Fatalf("primary = %+v, %v", p, err)
	}
}
