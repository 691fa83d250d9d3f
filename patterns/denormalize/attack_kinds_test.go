package denormalize

import (
	"encoding/json"
	"testing"

	"github.com/tablepatterns/tablepatterns/queueworker"
)

// Attacks "duplicated, reordered and replayed messages end in the same copies" across the
// kind rename, through the worker: every message of a put, two source updates and a move
// re-enqueued newest first, each under the new kind and the legacy kind
// ("denormalize/<name>/source|target"), plus forged messages of the new kinds (keys that
// are not keys, an Old naming a source the target never copied). The copies and links
// must end exact and only the malformed messages be poisoned.
func TestAttackAcrossLegacyAndNewKindsInFlightAndForged(t *testing.T) {
	t.Parallel()
	b := setup(t, false, true)
	q := b.queue()
	r := b.across(q, nil)
	jones, cao := manager("Sales", "000152", "Jun", "Jones", "1"), manager("Marketing", "000223", "Jeff", "Cao", "1")
	b.insert(jones, cao)
	var all []message
	if err := r.PutTarget(b.Ctx, dept("Departments", "Sales", "Sales", jones)); err != nil {
		t.Fatal(err)
	}
	all = append(all, b.takeMessages(q)...)
	jones.Phone, jones.ETag = "2", ""
	if err := r.UpdateSource(b.Ctx, jones); err != nil {
		t.Fatal(err)
	}
	all = append(all, b.takeMessages(q)...)
	if err := r.PutTarget(b.Ctx, dept("Departments", "Sales", "Sales", cao)); err != nil {
		t.Fatal(err)
	}
	all = append(all, b.takeMessages(q)...)
	cao.Phone, cao.ETag = "9", ""
	if err := r.UpdateSource(b.Ctx, cao); err != nil {
		t.Fatal(err)
	}
	all = append(all, b.takeMessages(q)...)
	legacy := map[string]string{r.SourceKind(): "denormalize/Manager/source", r.TargetKind(): "denormalize/Manager/target"}
	for i := len(all) - 1; i >= 0; i-- {
		m := all[i]
		if legacy[m.Kind] == "" {
			t.Fatalf("message of kind %q", m.Kind)
		}
		for _, kind := range []string{legacy[m.Kind], m.Kind} {
			if _, err := queueworker.Enqueue(b.Ctx, q, kind, "", json.RawMessage(m.Payload), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	forged := []struct {
		kind    string
		payload any
	}{
		{r.SourceKind(), SourceChange{PartitionKey: "Sales\x01", RowKey: "000152"}},
		{r.TargetKind(), TargetChange{PartitionKey: "Departments", RowKey: "a/b"}},
	}
	for _, f := range forged {
		if _, err := queueworker.Enqueue(b.Ctx, q, f.kind, "", f.payload, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A well-formed forged target message naming Jones as an old source: harmless.
	if _, err := queueworker.Enqueue(b.Ctx, q, r.TargetKind(), "", TargetChange{PartitionKey: "Departments", RowKey: "Sales",
		Ref: &Key{"Sales", "000152"}, Old: []Key{{"Marketing", "000223"}}}, nil); err != nil {
		t.Fatal(err)
	}
	st := b.drain(q, r)
	t.Logf("stats %+v", st)
	if st.Poisoned != int64(len(forged)) {
		t.Errorf("poisoned %d, want %d", st.Poisoned, len(forged))
	}
	if d := b.checkCopy(r, Key{"Departments", "Sales"}); d.ManagerPhone != "9" || d.ManagerName != "Jeff Cao" {
		t.Fatalf("department %+v", d)
	}
	b.checkCopies(r, Key{"Sales", "000152"})
	b.checkCopies(r, Key{"Marketing", "000223"}, Key{"Departments", "Sales"})
}
