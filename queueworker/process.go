package queueworker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/retry"
)

// lease is the worker's hold on one dequeued message. receipt changes with every update;
// it is touched by the renewal goroutine while the handler runs and by the settling code
// after the renewal goroutine has ended (its done channel orders the two).
type lease struct {
	id, text string
	receipt  string
	lost     bool
}

// process handles one delivery from decoding to settling.
func (w *Worker) process(r *run, m *azqueue.DequeuedMessage) {
	ls := &lease{id: *m.MessageID, receipt: *m.PopReceipt, text: deref(m.MessageText)}
	count := int64(0)
	if m.DequeueCount != nil {
		count = *m.DequeueCount
	}
	log := w.log.With(zap.String("messageId", ls.id), zap.Int64("dequeueCount", count))

	env, enc, err := decodeEnvelope(ls.text)
	if err != nil {
		log.Error("undecodable message: poisoning it", errs.LogField(err))
		w.poison(r, ls, log, nil, count, err)
		return
	}
	log = log.With(zap.String("kind", env.Kind), zap.String("id", env.ID))
	if env.Uncounted < 0 || env.Uncounted >= count {
		// The envelope is untrusted: "uncounted" counts earlier deliveries released
		// without counting, so it is below this delivery's DequeueCount. A message that
		// says otherwise would never reach MaxDequeueCount.
		err := fmt.Errorf("%w: its envelope's uncounted deliveries (%d) contradict the queue's dequeue count (%d)", errMalformed, env.Uncounted, count)
		log.Error("malformed message: poisoning it", errs.LogField(err))
		w.poison(r, ls, log, env, count, err)
		return
	}
	attempts := count - env.Uncounted
	if attempts > int64(w.cfg.MaxDequeueCount) {
		// An earlier delivery failed without settling (its worker died or lost the lock).
		err := fmt.Errorf("queueworker: delivery %d exceeds MaxDequeueCount %d (an earlier delivery did not settle; no error recorded)", attempts, w.cfg.MaxDequeueCount)
		log.Warn("dequeue count exceeded before processing: poisoning", errs.LogField(err))
		w.poison(r, ls, log, env, count, err)
		return
	}

	// The handler's span continues the producer's trace when the message carries one, and
	// starts a new trace otherwise (never a child of whatever span started the worker).
	ctx := telemetry.Extract(trace.ContextWithSpanContext(r.workCtx, trace.SpanContext{}), env.Trace)
	kind := w.kindAttr(env.Kind)
	ctx, span := telemetry.Tracer().Start(ctx, "queueworker.process", trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(telemetry.KeyQueue.String(w.queueName), telemetry.KeyKind.String(kind),
			telemetry.KeyMessageID.String(ls.id), telemetry.KeyDeliveries.Int64(count)))
	started := time.Now()
	herr := w.runHandler(ctx, r, ls, log, env, m)
	w.metrics.recordHandler(ctx, w.queueName, kind, time.Since(started), herr)
	var snooze *SnoozeError
	if errors.As(herr, &snooze) {
		telemetry.End(span, nil) // not a failure
	} else {
		telemetry.End(span, herr)
	}
	if ls.lost {
		w.c.lost.Add(1)
		log.Warn("lock lost while the handler ran: leaving the message alone (it will be delivered again)", zap.NamedError("handlerError", herr))
		return
	}
	w.settle(r, ls, log, env, enc, attempts, count, herr)
}

// UnregisteredKind is the tablepatterns.message.kind attribute (metrics and spans) of a
// delivery whose kind has no handler. The envelope is untrusted: its kind is whatever
// the writer of the message chose, so only registered kinds become attribute values
// (a forged kind would otherwise add a metric series for the life of the process and
// carry its control characters into every export). Logs keep the raw kind, escaped by
// the encoder.
const UnregisteredKind = "unregistered"

// kindAttr is kind as a telemetry attribute: kind when it has a handler, else
// UnregisteredKind.
func (w *Worker) kindAttr(kind string) string {
	if _, ok := w.handlers[kind]; ok {
		return kind
	}
	return UnregisteredKind
}

// runHandler runs the kind's handler with panic recovery while a goroutine renews the lock.
func (w *Worker) runHandler(ctx context.Context, r *run, ls *lease, log *zap.Logger, env *envelope, m *azqueue.DequeuedMessage) (err error) {
	h, ok := w.handlers[env.Kind]
	if !ok {
		return fmt.Errorf("%w %q", ErrNoHandler, env.Kind)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go w.renew(r, ls, log, stop, done)
	defer func() {
		close(stop)
		<-done // never settle with a receipt a renewal is about to replace
	}()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("queueworker: handler panicked: %v\n%s", p, debug.Stack())
		}
	}()
	d := &delivery{env: env, messageID: ls.id, dequeueCount: deref64(m.DequeueCount), insertionTime: derefTime(m.InsertionTime)}
	return h(ctx, d)
}

// renew extends the lock every half VisibilityTimeout until stop is closed. It sends the
// original text: UpdateMessage always rewrites the content.
func (w *Worker) renew(r *run, ls *lease, log *zap.Logger, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	interval := w.cfg.VisibilityTimeout / 2
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if err := w.update(r.opsCtx, ls, "renew", ls.text, w.cfg.VisibilityTimeout); err != nil {
			if ls.lost {
				return // process logs it once the handler returns
			}
			log.Error("lock renewal failed: retrying sooner", errs.LogField(err))
			t.Reset(interval / 2)
			continue
		}
		w.c.renewed.Add(1)
		t.Reset(interval)
	}
}

// settle acts on the handler's result.
func (w *Worker) settle(r *run, ls *lease, log *zap.Logger, env *envelope, enc encoding, attempts, count int64, herr error) {
	var snooze *SnoozeError
	var cancel *CancelError
	switch {
	case herr == nil:
		if w.deleteMessage(r, ls, log) {
			w.c.processed.Add(1)
		}
	case errors.As(herr, &cancel):
		w.c.failed.Add(1)
		log.Error("handler cancelled the message: poisoning it", errs.LogField(herr))
		w.poison(r, ls, log, env, count, herr)
	case errors.As(herr, &snooze):
		w.c.snoozed.Add(1)
		log.Debug("handler snoozed", zap.Duration("for", snooze.Duration))
		w.releaseUncounted(r, ls, log, env, enc, snooze.Duration)
	case r.workCtx.Err() != nil:
		// The shutdown cancelled the handler: not the message's fault.
		w.c.interrupted.Add(1)
		log.Info("handler interrupted by shutdown: releasing the message", errs.LogField(herr))
		w.releaseUncounted(r, ls, log, env, enc, 0)
	case attempts >= int64(w.cfg.MaxDequeueCount):
		w.c.failed.Add(1)
		log.Error("handler failed on the last allowed delivery: poisoning", errs.LogField(herr))
		w.poison(r, ls, log, env, count, herr)
	default:
		w.c.failed.Add(1)
		w.c.retried.Add(1)
		if w.cfg.RetryDelay < 0 {
			log.Warn("handler failed: the message reappears when its lock expires", errs.LogField(herr))
			return
		}
		delay := retryDelay(w.cfg.RetryDelay, w.cfg.MaxRetryDelay, attempts, rand.Float64)
		log.Warn("handler failed: releasing the message", errs.LogField(herr), zap.Duration("retryIn", delay))
		if err := w.update(r.opsCtx, ls, "release", ls.text, delay); err != nil {
			w.settleFailed(ls, log, "release", err)
		}
	}
}

// releaseUncounted releases the message after d with its envelope's Uncounted incremented,
// so that this delivery does not count towards MaxDequeueCount. A rewrite that would not
// fit the service's limit falls back to a plain release.
func (w *Worker) releaseUncounted(r *run, ls *lease, log *zap.Logger, env *envelope, enc encoding, d time.Duration) {
	next := *env
	next.Uncounted++
	text, err := encodeEnvelope(&next, enc)
	if err != nil || len(text) > MaxMessageSize {
		text = ls.text
	}
	if err := w.update(r.opsCtx, ls, "release", text, min(d, maxVisibility)); err != nil {
		w.settleFailed(ls, log, "release", err)
	}
}

// update sets the message's text and visibility, keeping the new pop receipt. A stale
// receipt (400 PopReceiptMismatch, or 404 once the message is gone or re-dequeued) marks
// the lease lost.
func (w *Worker) update(ctx context.Context, ls *lease, op, text string, visibility time.Duration) error {
	err := retry.Do(ctx, w.cfg.Retry, retry.Op{Name: op, Resource: w.queueName, RowKey: ls.id}, func(ctx context.Context, _ int) error {
		resp, err := w.cfg.Queue.UpdateMessage(ctx, ls.id, ls.receipt, text, &azqueue.UpdateMessageOptions{VisibilityTimeout: seconds(visibility)})
		if err != nil {
			return err
		}
		if resp.PopReceipt == nil {
			return errors.New("queueworker: update response without a pop receipt")
		}
		ls.receipt = *resp.PopReceipt
		return nil
	})
	if err != nil && isLostLock(err) {
		ls.lost = true
	}
	return errs.Wrap(err, op, w.queueName, "", ls.id)
}

// isLostLock reports a stale pop receipt or a message that is gone.
func isLostLock(err error) bool {
	return isResponse(err, http.StatusBadRequest, "PopReceiptMismatch") || isResponse(err, http.StatusNotFound, "")
}

// deleteMessage deletes the message with the lease's receipt. A 404 after a retry means an
// earlier attempt whose response was lost deleted it, so it counts as done.
func (w *Worker) deleteMessage(r *run, ls *lease, log *zap.Logger) bool {
	err := retry.Do(r.opsCtx, w.cfg.Retry, retry.Op{Name: "delete message", Resource: w.queueName, RowKey: ls.id}, func(ctx context.Context, _ int) error {
		_, err := w.cfg.Queue.DeleteMessage(ctx, ls.id, ls.receipt, nil)
		return err
	})
	switch {
	case err == nil:
		return true
	case isResponse(err, http.StatusNotFound, ""):
		log.Debug("message already deleted (a lost response, or its lock expired)")
		return true
	case isLostLock(err):
		w.c.lost.Add(1)
		log.Warn("lock lost before the delete: the message will be delivered again", errs.LogField(err))
		return false
	default:
		w.settleFailed(ls, log, "delete", err)
		return false
	}
}

// settleFailed logs a failed delete or release: the message reappears when its lock expires.
func (w *Worker) settleFailed(ls *lease, log *zap.Logger, op string, err error) {
	if ls.lost {
		w.c.lost.Add(1)
		log.Warn(op+": lock lost; the message will be delivered again", errs.LogField(err))
		return
	}
	w.c.settleErrors.Add(1)
	log.Error(op+" failed: the message reappears when its lock expires", errs.LogField(errs.Wrap(err, op, w.queueName, "", ls.id)))
}

// poison copies the message to the poison queue with cause recorded, then deletes it. If
// the copy fails the message stays (and is poisoned again at its next delivery); if the
// delete fails after the copy, the poison queue may hold it twice.
func (w *Worker) poison(r *run, ls *lease, log *zap.Logger, env *envelope, count int64, cause error) {
	text := poisonText(w.queueName, ls.id, ls.text, env, count, cause)
	if err := w.ensurePoisonQueue(r.opsCtx); err != nil {
		w.settleFailed(ls, log, "create poison queue", err)
		return
	}
	err := retry.Do(r.opsCtx, w.cfg.Retry, retry.Op{Name: "enqueue poison", Resource: queueNameOf(w.cfg.PoisonQueue), RowKey: ls.id}, func(ctx context.Context, _ int) error {
		_, err := w.cfg.PoisonQueue.EnqueueMessage(ctx, text, &azqueue.EnqueueMessageOptions{TimeToLive: ptr(int32(-1))})
		return err
	})
	if err != nil {
		w.settleFailed(ls, log, "enqueue poison", err)
		return
	}
	if w.deleteMessage(r, ls, log) {
		w.c.poisoned.Add(1)
		log.Warn("message moved to the poison queue", zap.String("poisonQueue", queueNameOf(w.cfg.PoisonQueue)), errs.LogField(cause))
	}
}

// ensurePoisonQueue creates the poison queue once per worker. Create succeeds on an
// existing queue without metadata (204); 409 QueueAlreadyExists is accepted too.
func (w *Worker) ensurePoisonQueue(ctx context.Context) error {
	if w.poisonReady.Load() {
		return nil
	}
	err := retry.Do(ctx, w.cfg.Retry, retry.Op{Name: "create poison queue", Resource: queueNameOf(w.cfg.PoisonQueue)}, func(ctx context.Context, _ int) error {
		_, err := w.cfg.PoisonQueue.Create(ctx, nil)
		if isResponse(err, http.StatusConflict, "") {
			return nil
		}
		return err
	})
	if err == nil {
		w.poisonReady.Store(true)
	}
	return err
}

func deref64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
