package consistency

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/archivetest"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// newWorker returns a worker for a's jobs on a fresh queue of b's account, and a client
// that enqueues on it.
func newWorker(t *testing.T, b *bed, queue string, a *Archiver) (*queueworker.Worker, *queueworker.Client) {
	t.Helper()
	return archivetest.NewWorker(t, b.clients, queue, a.Register)
}

// Through the queue: jobs enqueued twice, and a job for an entity that does not exist.
func TestWorkerRunsArchiveJobs(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	w, c := newWorker(t, b, testenv.QueueName(t), b.a)
	want := map[string]int32{}
	for i := 0; i < 20; i++ {
		rk := fmt.Sprintf("%06d", i)
		if err := b.current.Insert(b.ctx, employee("Sales", rk, int32(i))); err != nil {
			t.Fatal(err)
		}
		want[rk] = int32(i)
		for dup := 0; dup < 1+i%2; dup++ {
			if err := EnqueueArchiveEntity(b.ctx, c, b.job("Sales", rk)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := EnqueueArchiveEntity(b.ctx, c, b.job("Sales", "ghost")); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	for rk, age := range want {
		b.assertArchived(t, "Sales", rk, employee("Sales", rk, age))
	}
	poison, err := queueworker.PeekPoison(b.ctx, w.PoisonQueue(), 32)
	if err != nil {
		t.Fatal(err)
	}
	if len(poison) != 1 || !strings.Contains(poison[0].Error, "nothing to archive") || !strings.Contains(string(poison[0].Payload), "ghost") {
		t.Fatalf("poison queue: %+v", poison)
	}
}

// Stop the worker between every pair of steps of a job, start a new one: the final state
// is always correct: in Archive exactly once, absent from Current, the message gone.
func TestWorkerStoppedBetweenSteps(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	queue := testenv.QueueName(t)
	for i, step := range []string{"read", "copied", "deleted"} {
		rk := fmt.Sprintf("%06d", i)
		if err := b.current.Insert(b.ctx, employee("Sales", rk, int32(i))); err != nil {
			t.Fatal(err)
		}
		crashing, err := New(b.clients, &Options{Retry: fastRetry()})
		if err != nil {
			t.Fatal(err)
		}
		w1, c := newWorker(t, b, queue, crashing)
		ctx, stop := context.WithCancel(b.ctx)
		var reached atomic.Bool
		crashing.seams.step = func(_, s string) error {
			if s == step {
				reached.Store(true)
				stop()          // the process is going down ...
				return errCrash // ... and this handler never finishes its job
			}
			return nil
		}
		if err := EnqueueArchiveEntity(b.ctx, c, b.job("Sales", rk)); err != nil {
			t.Fatal(err)
		}
		if err := w1.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("worker stopped after %s: %v", step, err)
		}
		if !reached.Load() {
			t.Fatalf("the worker stopped before step %s", step)
		}
		// The message was not deleted: a new worker (a restarted process) finishes the job.
		w2, _ := newWorker(t, b, queue, b.a)
		// Drain waits for the released message to come back; a drain that handles nothing
		// while the entity is not archived means the job was lost.
		for handled := int64(-1); ; {
			drain(t, w2)
			if _, err := b.archive.Get(b.ctx, "Sales", rk); err == nil {
				break
			}
			if h := w2.Stats().Processed + w2.Stats().Failed; h == handled {
				t.Fatalf("job stopped after %s never completed", step)
			} else {
				handled = h
			}
		}
		b.assertArchived(t, "Sales", rk, employee("Sales", rk, int32(i)))
		props, err := b.clients.Queues.NewQueueClient(queue).GetProperties(b.ctx, nil)
		if err != nil || props.ApproximateMessagesCount == nil || *props.ApproximateMessagesCount != 0 {
			t.Fatalf("messages left after a stop at %s: %v %v", step, props.ApproximateMessagesCount, err)
		}
	}
}

// With 20 % of table, blob and queue requests failing transiently (including responses
// lost after the request was served), 100 archive jobs (1,000 under make soak) all
// complete exactly once.
func TestArchiveJobsUnderFaults(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	w, c := newWorker(t, b, testenv.QueueName(t), b.a)
	// 100 jobs send about 600 table and queue requests, so each kind of fault fires in
	// every step of a move about ten times (the check below wants n/5 table faults), and
	// 10 jobs per partition run concurrently in each of the 10 partitions.
	n := testenv.Scale(100, 1000)
	all := make([]string, n)
	batch := make([]*codec.Entity, n)
	for i := range all {
		all[i] = fmt.Sprintf("%06d", i)
		batch[i] = employee(fmt.Sprintf("P%d", i%10), all[i], int32(i))
	}
	if err := b.current.BulkWrite(b.ctx, batch, nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i, rk := range all {
		wg.Add(1)
		go func(i int, rk string) {
			defer wg.Done()
			if err := EnqueueArchiveEntity(b.ctx, c, b.job(fmt.Sprintf("P%d", i%10), rk)); err != nil {
				t.Error(err)
			}
		}(i, rk)
		if i%32 == 31 {
			wg.Wait()
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, p := range []*faultproxy.Proxy{ps.Table, ps.Queue} {
		p.SetSeed(11)
		p.AddRule(faultproxy.Rule{Name: "busy", Probability: 0.1, Action: faultproxy.Respond(503, "ServerBusy")})
		p.AddRule(faultproxy.Rule{Name: "drop-after", Probability: 0.1, Action: faultproxy.DropAfterForward()})
	}
	drain(t, w)
	ps.Table.ClearRules()
	ps.Queue.ClearRules()
	fired := ps.Table.CountMatching(func(r faultproxy.RequestInfo) bool { return r.Fired != "" })
	if fired < n/5 {
		t.Fatalf("only %d table faults fired: the test did not exercise them", fired)
	}
	left, err := b.current.Collect(b.ctx, repo.Query{})
	if err != nil || len(left) != 0 {
		t.Fatalf("%d entities left in Current (%v)", len(left), err)
	}
	archived, err := b.archive.Collect(b.ctx, repo.Query{})
	if err != nil || len(archived) != n {
		t.Fatalf("%d entities in Archive, want %d (%v)", len(archived), n, err)
	}
	poison, err := queueworker.PeekPoison(b.ctx, w.PoisonQueue(), 32)
	if err != nil && !errors.Is(err, repo.ErrNotFound) {
		t.Fatal(err)
	}
	if len(poison) != 0 {
		t.Fatalf("%d jobs poisoned: first: %s", len(poison), poison[0].Error)
	}
}
