package queueworker

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Worker consumes one queue: it dequeues messages in batches, runs the registered handler
// of each message's kind on a bounded number of goroutines, renews the message's lock
// while the handler runs, deletes the message when the handler succeeded, releases it when
// the handler failed, and moves it to the poison queue when it failed MaxDequeueCount
// times or was cancelled. See the package documentation for the semantics.
//
// A Worker runs at most once at a time (Start, Run or Drain); it can be started again
// after it stopped. Its methods are safe for concurrent use.
type Worker struct {
	cfg       Config
	queueName string
	handlers  map[string]handler
	log       *zap.Logger

	sem       chan struct{} // one token per running handler
	slotFreed chan struct{} // nudges the fetch loop when a handler ends
	c         counters
	metrics   *metrics
	// observeOnce registers the metrics callback at the first run.
	observeOnce sync.Once

	poisonReady atomic.Bool // the poison queue was created (or found)

	mu  sync.Mutex
	cur *run // the current run, nil when stopped

	// onPollWait, if set (tests), is called with every wait of the empty-queue polling.
	onPollWait func(time.Duration)
}

// run is one Start, Run or Drain.
type run struct {
	drain bool

	fetchCtx  context.Context // cancelled to stop dequeuing
	stopFetch context.CancelFunc
	workCtx   context.Context // the handlers' context, cancelled to interrupt them
	stopWork  context.CancelFunc
	opsCtx    context.Context // for deletes, releases and renewals: never cancelled

	handlers sync.WaitGroup
	drained  atomic.Bool   // the fetch loop ended because the queue drained
	done     chan struct{} // closed when the fetch loop and every handler have returned
}

// New returns a Worker for cfg after filling its defaults and validating it. It does no
// I/O. It returns an *errs.InvalidInputError (errors.Is ErrInvalidInput) naming the field
// that is missing or out of range.
func New(cfg Config) (*Worker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	w := &Worker{
		cfg:       cfg,
		queueName: queueNameOf(cfg.Queue),
		handlers:  maps.Clone(cfg.Registry.handlers),
		sem:       make(chan struct{}, cfg.Concurrency),
		slotFreed: make(chan struct{}, 1),
		metrics:   newMetrics(),
	}
	w.log = cfg.Logger.With(zap.String("queue", w.queueName))
	return w, nil
}

// Queue returns the queue the worker consumes.
func (w *Worker) Queue() *azqueue.QueueClient { return w.cfg.Queue }

// PoisonQueue returns the worker's poison queue (it may not exist yet: it is created when
// the first message is poisoned).
func (w *Worker) PoisonQueue() *azqueue.QueueClient { return w.cfg.PoisonQueue }

// Start starts the worker in the background and returns at once. It runs until ctx is
// cancelled (then it shuts down as Stop does) or Stop or StopAndCancel is called. Values
// of ctx reach the handlers' contexts, its cancellation does not directly: see Stop.
// It returns ErrAlreadyStarted if the worker is running.
func (w *Worker) Start(ctx context.Context) error {
	r, err := w.begin(ctx, false)
	if err != nil {
		return err
	}
	go func() {
		select {
		case <-ctx.Done():
			_ = w.stop(context.Background(), r, false)
		case <-r.done:
		}
	}()
	return nil
}

// Run starts the worker and blocks until ctx is cancelled and the worker has shut down as
// Stop does. It returns ErrAlreadyStarted if the worker is running, nil otherwise (a
// shutdown that had to cancel handlers is logged, their messages are not lost).
func (w *Worker) Run(ctx context.Context) error {
	r, err := w.begin(ctx, false)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return w.stop(context.Background(), r, false)
	case <-r.done: // Stop or StopAndCancel from elsewhere
		return nil
	}
}

// RunUntilSignal is Run until ctx is cancelled or the process receives SIGINT or SIGTERM,
// for the main function of a worker binary. It returns Run's error.
func (w *Worker) RunUntilSignal(ctx context.Context) error {
	ctx, cancel := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer cancel()
	return w.Run(ctx)
}

// Stop shuts the worker down gracefully: it stops dequeuing, lets in-flight handlers
// finish for up to ShutdownTimeout (or until ctx is done), then cancels their contexts and
// waits for them to return. A message whose handler did not succeed is never deleted: it
// is released (visible again at once, the delivery not counted towards MaxDequeueCount)
// or, if that fails, reappears when its lock expires. Stop returns nil once every handler
// has returned, or ctx's error if ctx ends first (the handlers then keep running in the
// background until they return). Stop on a stopped worker returns nil.
func (w *Worker) Stop(ctx context.Context) error {
	r := w.current()
	if r == nil {
		return nil
	}
	return w.stop(ctx, r, false)
}

// StopAndCancel is Stop without the grace period: it stops dequeuing and cancels the
// handlers' contexts at once, then waits for them to return. It returns nil, or ctx's
// error if ctx ends before every handler returned.
func (w *Worker) StopAndCancel(ctx context.Context) error {
	r := w.current()
	if r == nil {
		return nil
	}
	return w.stop(ctx, r, true)
}

// Stopped returns a channel closed when the current run has ended (closed already if the
// worker is not running).
func (w *Worker) Stopped() <-chan struct{} {
	if r := w.current(); r != nil {
		return r.done
	}
	ch := make(chan struct{})
	close(ch)
	return ch
}

// Drain runs the worker until the queue is drained, then stops it and returns nil. The
// queue is drained when a dequeue returns nothing, no handler is running and the queue's
// approximate message count (GetProperties, which counts invisible messages too) is 0: so
// a failed message waiting for its retry, or one enqueued with a VisibilityDelay, keeps
// Drain waiting until it is handled or poisoned. The count is approximate on real Azure
// (never lower than the truth, so Drain may wait for a while but does not return early).
// If ctx ends first, Drain shuts down as Stop does and returns ctx's error; if Stop ends it
// first, it returns context.Canceled. It returns ErrAlreadyStarted if the worker is
// running. Meant for tests, demos and batch jobs ("run the archiver until the queue
// drains").
func (w *Worker) Drain(ctx context.Context) error {
	r, err := w.begin(ctx, true)
	if err != nil {
		return err
	}
	select {
	case <-r.done:
		if r.drained.Load() {
			return nil
		}
		return context.Canceled // stopped by Stop from elsewhere
	case <-ctx.Done():
		_ = w.stop(context.Background(), r, false)
		return ctx.Err()
	}
}

// begin starts a run.
func (w *Worker) begin(ctx context.Context, drain bool) (*run, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur != nil {
		return nil, ErrAlreadyStarted
	}
	base := context.WithoutCancel(ctx)
	r := &run{drain: drain, opsCtx: base, done: make(chan struct{})}
	r.fetchCtx, r.stopFetch = context.WithCancel(base)
	r.workCtx, r.stopWork = context.WithCancel(base)
	w.cur = r
	// The counters are cumulative, so a stopped worker keeps reporting its final counts:
	// an exporter flushed after Run returns (the archiver's, at exit) still sees them.
	// One registration per Worker, made by its first run and kept for its life.
	w.observeOnce.Do(func() { w.metrics.observe(w) })
	w.log.Info("worker started", zap.Int("concurrency", w.cfg.Concurrency), zap.Int("batchSize", w.cfg.BatchSize), zap.Bool("drain", drain))
	go w.fetch(r)
	return r, nil
}

func (w *Worker) current() *run {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur
}

// stop ends run r: see Stop.
func (w *Worker) stop(ctx context.Context, r *run, cancelNow bool) error {
	r.stopFetch()
	if cancelNow {
		r.stopWork()
	} else {
		var grace <-chan time.Time
		if w.cfg.ShutdownTimeout > 0 {
			t := time.NewTimer(w.cfg.ShutdownTimeout)
			defer t.Stop()
			grace = t.C
		}
		select {
		case <-r.done:
			return nil
		case <-grace:
			w.log.Warn("shutdown timeout: cancelling running handlers", zap.Int64("inFlight", w.c.inFlight.Load()))
		case <-ctx.Done():
		}
		r.stopWork()
	}
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// finish marks r as ended.
func (w *Worker) finish(r *run) {
	r.stopFetch()
	r.stopWork()
	w.mu.Lock()
	if w.cur == r {
		w.cur = nil
	}
	w.mu.Unlock()
	w.log.Info("worker stopped", zap.Bool("drained", r.drained.Load()))
	close(r.done)
}

// fetch is the run's dequeue loop; it returns when dequeuing stops, after every handler
// it started has returned.
func (w *Worker) fetch(r *run) {
	defer w.finish(r)
	defer r.handlers.Wait()
	poll := newPollBackoff(w.cfg.MinPollInterval, w.cfg.MaxPollInterval, rand.Float64)
	// Fetch again when half the slots a batch can fill are free, as WebJobs does
	// (newBatchThreshold = batchSize/2), and never more messages than free slots.
	threshold := max(1, min(w.cfg.BatchSize, w.cfg.Concurrency)/2)
	for {
		free, ok := w.waitSlots(r.fetchCtx, threshold)
		if !ok {
			return
		}
		msgs, err := w.dequeue(r.fetchCtx, min(free, w.cfg.BatchSize))
		if r.fetchCtx.Err() != nil && len(msgs) == 0 {
			return
		}
		if err != nil {
			w.log.Error("dequeue failed", errs.LogField(err))
			if !w.pollWait(r.fetchCtx, poll.Next(), nil) {
				return
			}
			continue
		}
		if len(msgs) == 0 {
			if r.drain && w.isDrained(r) {
				r.drained.Store(true)
				return
			}
			if !w.pollWait(r.fetchCtx, poll.Next(), poll) {
				return
			}
			continue
		}
		poll.Reset()
		for _, m := range msgs {
			w.sem <- struct{}{} // never blocks: at most free messages were asked for
			w.c.inFlight.Add(1)
			r.handlers.Add(1)
			go w.handle(r, m)
		}
	}
}

// waitSlots waits until at least want handler slots are free and returns how many are.
func (w *Worker) waitSlots(ctx context.Context, want int) (int, bool) {
	for {
		if ctx.Err() != nil {
			return 0, false
		}
		free := cap(w.sem) - len(w.sem)
		if free >= want {
			return free, true
		}
		select {
		case <-ctx.Done():
			return 0, false
		case <-w.slotFreed:
		}
	}
}

// pollWait sleeps d unless ctx ends first. With poll set, a handler that ends also ends
// the wait and resets poll: a job that ran long must not leave the loop (and a Drain)
// waiting for an interval that grew meanwhile.
func (w *Worker) pollWait(ctx context.Context, d time.Duration, poll *pollBackoff) bool {
	w.c.emptyWaits.Add(1)
	if w.onPollWait != nil {
		w.onPollWait(d)
	}
	var freed <-chan struct{}
	if poll != nil && w.c.inFlight.Load() > 0 {
		freed = w.slotFreed
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	case <-freed:
		poll.Reset()
		return true
	}
}

// dequeue fetches up to n messages with the worker's lock.
func (w *Worker) dequeue(ctx context.Context, n int) ([]*azqueue.DequeuedMessage, error) {
	var msgs []*azqueue.DequeuedMessage
	err := retry.Do(ctx, w.cfg.Retry, retry.Op{Name: "dequeue", Resource: w.queueName}, func(ctx context.Context, _ int) error {
		resp, err := w.cfg.Queue.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{
			NumberOfMessages:  ptr(int32(n)),
			VisibilityTimeout: seconds(w.cfg.VisibilityTimeout),
		})
		if err != nil {
			return err
		}
		msgs = resp.Messages
		return nil
	})
	w.c.dequeues.Add(1)
	if err != nil {
		return nil, errs.Wrap(err, "dequeue", w.queueName, "", "")
	}
	// The service never sends nil entries, but a message without id or receipt cannot be
	// settled: skip it (it reappears after its lock) rather than crash.
	out := msgs[:0]
	for _, m := range msgs {
		if m != nil && m.MessageID != nil && m.PopReceipt != nil {
			out = append(out, m)
		}
	}
	w.c.dequeued.Add(int64(len(out)))
	return out, nil
}

// isDrained reports whether nothing is left: no handler running and no message in the
// queue, visible or not.
func (w *Worker) isDrained(r *run) bool {
	if w.c.inFlight.Load() != 0 {
		return false
	}
	var count int32
	err := retry.Do(r.fetchCtx, w.cfg.Retry, retry.Op{Name: "get queue properties", Resource: w.queueName}, func(ctx context.Context, _ int) error {
		resp, err := w.cfg.Queue.GetProperties(ctx, nil)
		if err != nil {
			return err
		}
		if resp.ApproximateMessagesCount != nil {
			count = *resp.ApproximateMessagesCount
		}
		return nil
	})
	if err != nil {
		w.log.Warn("drain: cannot read the queue's message count", errs.LogField(errs.Wrap(err, "get queue properties", w.queueName, "", "")))
		return false
	}
	return count == 0
}

// handle runs one message in its slot.
func (w *Worker) handle(r *run, m *azqueue.DequeuedMessage) {
	defer func() {
		w.c.inFlight.Add(-1)
		<-w.sem
		select {
		case w.slotFreed <- struct{}{}:
		default:
		}
		r.handlers.Done()
	}()
	w.process(r, m)
}

// isResponse reports whether err carries a service response with status (and code, if
// not empty).
func isResponse(err error, status int, code string) bool {
	re, ok := asResponse(err)
	return ok && re.StatusCode == status && (code == "" || re.ErrorCode == code)
}

func asResponse(err error) (*azcore.ResponseError, bool) {
	var re *azcore.ResponseError
	ok := errors.As(err, &re)
	return re, ok
}
