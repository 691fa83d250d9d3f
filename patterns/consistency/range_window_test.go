package consistency

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The window between a batch's target read and its source read, held exactly at the
// proxy: the source query of the batch is paused; meanwhile the application updates one
// entity (v1 -> v2), a duplicate run moves the whole range (v2 archived), and the
// application may re-create the entity (v3). Then the held query goes on. The held run
// read the target before the source, so it never writes its stale view over the newer
// copy: the end is v2 archived (or v3, re-created and moved), every other entity once.
func TestRangeSourceChangedBetweenTargetAndSourceRead(t *testing.T) {
	t.Parallel()
	for _, recreate := range []bool{false, true} {
		name := "update"
		if recreate {
			name = "update-move-recreate"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ps := testenv.Proxies(t)
			b := setup(t, ps.ConnectionString)
			direct := directTable(t, b.current.Name())
			want := b.loadRange(t, []string{"Sales"}, 40)
			job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}
			src := "/" + b.current.Name() + "()"
			p := ps.Table.PauseAt("batch source read", func(r *http.Request) bool {
				return r.Method == http.MethodGet && faultproxy.IsListEntities(r) && strings.Contains(r.URL.Path, src) &&
					r.URL.Query().Get("$select") == ""
			}, 1)
			t.Cleanup(p.Release)
			done := make(chan error, 1)
			go func() { _, err := b.a.ArchiveRange(b.ctx, job); done <- err }()
			if err := p.Wait(b.ctx); err != nil {
				t.Fatal(err)
			}
			v2 := rangeEntity("Sales", 7, 2)
			if err := direct.Update(b.ctx, v2, &repo.UpdateOptions{Unconditional: true}); err != nil {
				t.Fatal(err)
			}
			// The duplicate runs on direct clients: the pause holds only the first query.
			dup, err := New(directClients(t), &Options{Retry: fastRetry()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dup.ArchiveRange(b.ctx, job); err != nil {
				t.Fatal(err)
			}
			key := RangeKey{"Sales", v2.RowKey}
			want[key] = v2.ETag
			if recreate {
				v3 := rangeEntity("Sales", 7, 3)
				if err := direct.Insert(b.ctx, v3); err != nil {
					t.Fatal(err)
				}
				want[key] = v3.ETag
			}
			p.Release()
			if err := <-done; err != nil {
				t.Fatalf("held run: %v", err)
			}
			b.assertRangeArchived(t, want, nil)
		})
	}
}

// A stop between the enqueue of the continuation and the delete of the message (the
// "continued" step) leaves two messages over the rest of the range: the page's own,
// released, and its continuation. Both run, and every entity still ends archived once.
func TestRangeStoppedAfterContinuation(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	want := b.loadRange(t, []string{"Sales"}, 125) // three pages of 50
	c, queue := rangeClient(t, b)
	crashing := rangeArchiver(t, b, c, nil)
	crashing.seams.pageSize = 50
	ctx, stop := context.WithCancel(b.ctx)
	var fired atomic.Bool
	crashing.seams.step = func(_, step string) error {
		if step == "continued" && !fired.Swap(true) {
			stop()
			return errCrash
		}
		return nil
	}
	w := rangeWorker(t, b, queue, crashing)
	if err := EnqueueArchiveRange(b.ctx, c, ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}); err != nil {
		t.Fatal(err)
	}
	_ = w.Drain(ctx)
	if !fired.Load() {
		t.Fatal("the job never reached its continuation")
	}
	props, err := b.clients.Queues.NewQueueClient(queue).GetProperties(b.ctx, nil)
	if err != nil || props.ApproximateMessagesCount == nil || *props.ApproximateMessagesCount != 2 {
		t.Fatalf("messages after the stop: %v %v, want 2 (the page's and its continuation)", props.ApproximateMessagesCount, err)
	}
	resumed := rangeArchiver(t, b, c, nil)
	resumed.seams.pageSize = 50
	final := rangeWorker(t, b, queue, resumed)
	drain(t, final)
	b.assertRangeArchived(t, want, nil)
	if s := final.Stats(); s.Poisoned != 0 {
		t.Fatalf("worker: %+v", s)
	}
}
