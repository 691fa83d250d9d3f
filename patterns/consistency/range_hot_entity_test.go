package consistency

import (
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/repo"
)

// One hot entity, written again before every delete transaction of the range job (after
// the batch copied it, before the batch deletes), never stalls its batch: the 99 other
// entities of its batch move, the page succeeds and its continuation moves the rest of
// the range. The hot entity stays in the source, at its latest version (a later run of
// the job moves it), and the run says so in a warning that names its keys.
func TestRangeMovesTheRestOfABatchWhenOneEntityChangesBeforeEachDelete(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	const page = 100
	b.loadRange(t, []string{"Sales"}, page+100) // two pages: the second needs the continuation
	hot := rangeEntity("Sales", 50, 1)
	core, logs := observer.New(zap.WarnLevel)
	q, queue := rangeClient(t, b)
	a := rangeArchiver(t, b, q, &Options{Logger: zap.New(core)})
	a.seams.pageSize = page
	var mu sync.Mutex // batches run concurrently
	a.seams.step = func(job, step string) error {
		if job != KindArchiveRange || step != "copied" {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		hot.Properties["Version"] = hot.Properties["Version"].(int32) + 1
		return b.current.Upsert(b.ctx, hot, &repo.UpsertOptions{Mode: repo.Replace})
	}
	w, c := newWorker(t, b, queue, a)
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}
	if err := EnqueueArchiveRange(b.ctx, c, job); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	if s := w.Stats(); s.Failed != 0 || s.Poisoned != 0 {
		t.Fatalf("worker: %+v", s)
	}
	left, err := b.current.Collect(b.ctx, repo.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].RowKey != hot.RowKey || left[0].Properties["Version"] != hot.Properties["Version"] {
		t.Fatalf("left in the source: %d entities, want only the hot one at its last version", len(left))
	}
	got, err := b.archive.Collect(b.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != page+100 { // the hot one's copy of the version the batch read stays beside it
		t.Fatalf("archived %d, want %d", len(got), page+100)
	}
	warned := logs.FilterField(zap.String("rowKey", hot.RowKey)).Len()
	if warned == 0 {
		t.Fatalf("no warning names the entity left in the source: %v", logs.All())
	}
}
