package queueworker

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/retry"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// bundle is what a test works with: one fresh queue, clients on it that go straight to the
// server (direct) and ones that go through a fault proxy (queue, client, svc).
type bundle struct {
	t      testing.TB
	name   string
	direct *azqueue.QueueClient   // bypasses the proxy: for setup and assertions
	queue  *azqueue.QueueClient   // through the proxy: for the code under test
	svc    *azqueue.ServiceClient // through the proxy
	dsvc   *azqueue.ServiceClient // direct
	proxy  *faultproxy.Proxy
	client *Client
	log    *zap.Logger
}

// fastRetry keeps retry waits short so that fault tests finish quickly.
var fastRetry = retry.Policy{Delay: 20 * time.Millisecond, MinDelay: 10 * time.Millisecond, MaxDelay: 200 * time.Millisecond, MaxRetries: 10, MaxElapsed: 20 * time.Second}

func setup(t testing.TB) *bundle {
	t.Helper()
	b := &bundle{t: t, name: testenv.QueueName(t)}
	if tt, ok := t.(*testing.T); ok {
		b.log = zaptest.NewLogger(tt, zaptest.Level(zap.WarnLevel))
	} else {
		b.log = zap.NewNop()
	}
	directSvc := testenv.QueueService(t)
	b.dsvc = directSvc
	b.direct = directSvc.NewQueueClient(b.name)
	if _, err := b.direct.Create(context.Background(), nil); err != nil {
		t.Fatalf("create queue: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = b.direct.Delete(ctx, nil)
		_, _ = directSvc.NewQueueClient(b.name+PoisonSuffix).Delete(ctx, nil)
	})
	ps := testenv.Proxies(t)
	b.proxy = ps.Queue
	b.svc = testenv.QueueServiceFrom(t, ps.ConnectionString)
	b.queue = b.svc.NewQueueClient(b.name)
	c, err := NewClient(b.queue, &ClientOptions{Retry: fastRetry, Logger: b.log})
	if err != nil {
		t.Fatal(err)
	}
	b.client = c
	return b
}

// config returns a worker config for tests: short lock, fast polling and retries.
func (b *bundle) config(reg *Registry) Config {
	return Config{
		Queue:             b.queue,
		Service:           b.svc,
		Registry:          reg,
		VisibilityTimeout: 30 * time.Second,
		MinPollInterval:   10 * time.Millisecond,
		MaxPollInterval:   100 * time.Millisecond,
		ShutdownTimeout:   10 * time.Second,
		Retry:             fastRetry,
		Logger:            b.log,
	}
}

// worker builds a worker and makes sure it is stopped before the test ends.
func (b *bundle) worker(cfg Config) *Worker {
	b.t.Helper()
	w, err := New(cfg)
	if err != nil {
		b.t.Fatalf("New: %v", err)
	}
	b.t.Cleanup(func() {
		// No deadline of its own (t.Context is done by now): go test -timeout bounds it.
		if err := w.StopAndCancel(context.Background()); err != nil {
			b.t.Errorf("StopAndCancel: %v", err)
		}
	})
	return w
}

// drain runs w.Drain and fails the test if it does not drain. It waits as long as the
// worker makes progress (testenv.UntilStalled over progress), however loaded the machine:
// only a worker that stops moving for testenv.DefaultStall is ended.
func (b *bundle) drain(w *Worker) {
	b.t.Helper()
	if err := testenv.UntilStalled(context.Background(), 0, func() int64 { return progress(w) }, w.Drain); err != nil {
		b.t.Fatalf("Drain: %v (stats %+v)", err, w.Stats())
	}
}

// enqueue enqueues n messages of kind with ids prefix-0..n-1 straight to the server.
func (b *bundle) enqueue(kind, prefix string, n int) []string {
	b.t.Helper()
	c, err := NewClient(b.direct, &ClientOptions{Retry: fastRetry})
	if err != nil {
		b.t.Fatal(err)
	}
	ids := make([]string, n)
	var wg sync.WaitGroup
	errc := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		ids[i] = prefix + "-" + itoa(i)
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := Enqueue(context.Background(), c, kind, ids[i], item{N: i}, nil); err != nil {
				errc <- err
			}
		}(i)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		b.t.Fatalf("enqueue: %v", err)
	}
	return ids
}

// count returns the queue's approximate message count (visible and invisible), read
// straight from the server.
func (b *bundle) count(q *azqueue.QueueClient) int {
	b.t.Helper()
	resp, err := q.GetProperties(context.Background(), nil)
	if err != nil {
		b.t.Fatalf("get properties: %v", err)
	}
	return int(*resp.ApproximateMessagesCount)
}

// peekAll returns the texts of up to 32 visible messages of q.
func (b *bundle) peekAll(q *azqueue.QueueClient) []string {
	b.t.Helper()
	resp, err := q.PeekMessages(context.Background(), &azqueue.PeekMessagesOptions{NumberOfMessages: ptr(int32(32))})
	if err != nil {
		b.t.Fatalf("peek: %v", err)
	}
	var out []string
	for _, m := range resp.Messages {
		out = append(out, *m.MessageText)
	}
	return out
}

// progress sums the counters of w that move while it works: each delivery, its outcome,
// and each renewal (as archivetest.Progress). Empty polls are not progress: a drain that
// polls forever for a message that never comes back is stalled.
func progress(w *Worker) int64 {
	s := w.Stats()
	return s.Dequeued + s.Processed + s.Failed + s.Retried + s.Snoozed + s.Interrupted + s.Poisoned + s.Renewed
}

// eventually polls cond every 10 ms until it holds. It fails the test only when cond has
// not held for testenv.DefaultStall, a bound for a hang that a loaded machine does not
// reach (as testbed.WaitFor): a fixed deadline of seconds is one load can miss.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testenv.DefaultStall)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %v", what, testenv.DefaultStall)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, not synchronisation by sleep
	}
}

type item struct {
	N    int    `json:"n"`
	Note string `json:"note,omitempty"`
}

func itoa(i int) string { return strconv.Itoa(i) }
