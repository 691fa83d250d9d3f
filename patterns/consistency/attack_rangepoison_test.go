package consistency

import (
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// One entity of the range that the target cannot take (252 custom properties: legal in
// the source, 254 with the copy's two; any writer of the source can store it) stops the
// whole job: the error is ErrInvalidInput, permanent, so the worker cancels the message,
// and the other entities of its batch and every later page are never archived. Through
// the worker, with Options.Queue: 2,500 entities, the poison at 000005.
// Expected (promise: the job ends with every entity archived): the entity that cannot be
// copied is left in the source (and reported), the rest of the range moves.
func TestAttackRangeOnePoisonEntityStopsTheJob(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	want := b.loadRange(t, []string{"Sales"}, 2500)
	poison := &codec.Entity{PartitionKey: "Sales", RowKey: fmt.Sprintf("%06d", 5), Properties: map[string]any{}}
	for i := 0; i < codec.MaxProperties; i++ {
		poison.Properties[fmt.Sprintf("P%03d", i)] = int32(i)
	}
	if err := b.current.Update(b.ctx, poison, &repo.UpdateOptions{Unconditional: true}); err != nil {
		t.Fatal(err)
	}
	c, queue := rangeClient(t, b)
	a := rangeArchiver(t, b, c, nil)
	w := rangeWorker(t, b, queue, a)
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}
	if err := EnqueueArchiveRange(b.ctx, c, job); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	left, err := b.current.Collect(b.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("worker %+v; %d of %d left in the source", w.Stats(), len(left), len(want))
	if len(left) != 1 {
		t.Fatalf("%d entities left in the source, want only the one the target cannot take", len(left))
	}
}
