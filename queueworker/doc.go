// Package queueworker is a queue-driven, idempotent worker on Azure Queue storage (azqueue):
// typed handlers, message locks renewed while a handler runs, a poison queue, polling
// backoff and graceful shutdown. Its semantics copy the Azure WebJobs / Functions queue
// trigger, so that a team that knows that trigger knows this worker, and its API follows
// riverqueue/river.
//
// # Messages
//
// Every message is a small JSON envelope:
//
//	{"kind": "archive-order", "id": "…", "payload": {…}, "enqueuedAt": "2024-05-01T10:00:00Z"}
//
// Enqueue writes it base64-encoded, as Functions and WebJobs write queue messages, so a
// Functions app can consume a queue we fill. azqueue does not encode, and other writers
// send raw JSON, so the worker reads both: a text that starts with '{' is JSON, anything
// else is decoded as base64 (the two cannot be confused: '{' is no base64 character).
// base64 grows a message by 4/3: Enqueue measures the final encoded text and refuses one
// over 64 KiB (MaxMessageSize) with an *errs.InvalidInputError before sending anything
// (the service, and Azurite, would answer 413). The worker may add a field "uncounted"
// (see Snooze); a rewrite keeps the form the message was found in. Enqueue adds a field
// "trace" with the W3C trace context (traceparent, tracestate) of the caller's span when
// there is one, and leaves it out when the message would not fit with it.
//
// The id identifies the message to handlers across duplicates. Duplicates happen: an
// Enqueue whose response was lost is retried and stores the message twice, a delete whose
// response was lost, a lock lost to a slow handler or a crash between the work and the
// delete all deliver a message again. Handlers must therefore be idempotent, and can dedupe
// on Message.ID; every design-guide pattern built on this package re-reads state rather
// than trusting the message, which makes it order-independent too.
//
// # Handlers
//
// Register a typed function per kind and build a Worker:
//
//	reg := queueworker.NewRegistry()
//	queueworker.MustHandle(reg, "archive-order", func(ctx context.Context, m *queueworker.Message[Order]) error {
//		return archive(ctx, m.Payload) // idempotent
//	})
//	err := queueworker.CreateQueueIfNotExists(ctx, svc, "archive-jobs", nil) // and archive-jobs-poison
//	…
//	w, err := queueworker.New(queueworker.Config{Queue: q, Service: svc, Registry: reg})
//	…
//	err = w.RunUntilSignal(ctx) // or Start/Stop, or Drain in tests
//
// A handler's result steers the worker: nil deletes the message; Snooze(d) releases it for
// d without counting the delivery; Cancel(err) sends it to the poison queue at once; any
// other error is a failure. A panic is recovered and is a failure. A payload that does not
// decode into the handler's type, or a text that is no envelope, is treated as Cancel: it
// can never succeed. A kind without handler is an ordinary failure (ErrNoHandler), since
// a newer worker may know it during a rolling deployment.
//
// # What it copies from the WebJobs queue trigger
//
//   - Batches of 16 (BatchSize, at most 32 per dequeue); a new batch is fetched when half
//     of the batch's slots are free (their newBatchThreshold), never more than free slots.
//   - Each message is dequeued with a lock (VisibilityTimeout, default 10 minutes) renewed
//     every half of it while its handler runs. Every renewal sends the original text (an
//     update always rewrites the content) and an explicit visibility (azqueue's nil
//     options mean "visible now"), and keeps the new pop receipt for the next renewal and
//     the final delete. A stale receipt (400 PopReceiptMismatch, 404 MessageNotFound)
//     means the message is lost to this worker: it is logged and counted (Stats.Lost), and
//     the message is neither deleted nor released.
//   - The message is deleted only after its handler succeeded. A failed message is
//     released, visible again after RetryDelay (default 0, as Functions' visibilityTimeout);
//     here RetryDelay is the base of a jittered exponential backoff of the delivery count,
//     min(RetryDelay*Rand(0.8,1.2)*(2^n-1), MaxRetryDelay), where Functions uses a fixed delay.
//   - A message whose failing delivery is its MaxDequeueCount-th (default 5) goes to
//     "<queue>-poison", which is created on first use; one dequeued with a count already
//     above the maximum (an earlier delivery never settled) goes there before its handler
//     runs.
//   - An empty queue is polled after 100 ms, then at doubling intervals with ±20 % jitter up
//     to MaxPollInterval (1 minute); a message resets the interval.
//
// # Where it differs
//
//   - The poison message records why: the worker writes {"error", "queue", "messageId",
//     "dequeueCount", "poisonedAt", "message": <original envelope>} ("text" instead of
//     "message" for a text that was no envelope), where WebJobs copies the message as-is.
//     If that record would not fit in 64 KiB, the original text is copied as-is and the
//     error is only in the log. PeekPoison reads both, RequeuePoison moves them back:
//     at most the messages the poison queue held when it started, so it ends even while
//     a worker poisons the requeued messages again.
//   - Snooze and shutdown do not count. The service increments DequeueCount on every
//     delivery and cannot reset it, so the worker rewrites the envelope with "uncounted"
//     incremented when it releases a snoozed or interrupted delivery, and compares
//     DequeueCount - uncounted with MaxDequeueCount. (If that update fails, the message
//     reappears after its lock and the delivery does count.) WebJobs has no snooze. The
//     envelope is untrusted: an "uncounted" that is negative or not below DequeueCount
//     (a forged counter that would make the message immortal) makes it malformed.
//   - Every request is retried by package retry (jittered exponential backoff, transient
//     errors only). Build the azqueue clients with the SDK's own retries off
//     (azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}), or each attempt
//     becomes up to four requests. A delete that meets 404 on a retry counts as done.
//   - A malformed message is poisoned at its first delivery rather than retried.
//
// # Shutdown
//
// Stop (or the end of Start's context, or SIGINT/SIGTERM with RunUntilSignal) stops
// dequeuing, lets running handlers finish for up to ShutdownTimeout (30 s), then cancels
// their contexts. A message is never deleted unless its handler returned nil: one whose
// handler was interrupted is released at once (uncounted), and if even that fails it
// reappears when its lock expires. StopAndCancel skips the grace period. A dequeue that is
// interrupted by Stop may leave up to BatchSize messages invisible until their lock expires;
// they are not lost.
//
// # Testing and operations
//
// Drain runs the worker until the queue is empty: a dequeue returned nothing, no handler
// runs, and the queue's approximate message count (which includes invisible messages, so
// failed messages awaiting a retry) is zero. Stats returns atomic counters (processed,
// failed, retried, snoozed, poisoned, renewed, lost, in flight, …). Logs are structured zap
// entries with the queue, message id, kind, envelope id and dequeue count.
//
// # OpenTelemetry
//
// With the OpenTelemetry API's global providers set (otel.SetTracerProvider,
// otel.SetMeterProvider), Enqueue records a producer span "queueworker.enqueue" and carries
// its trace context in the envelope; the worker records a consumer span
// "queueworker.process" per delivery, a child of the enqueuing span when the message
// carries a valid trace context (it is parsed strictly and size-limited: messages are
// untrusted) and a new trace otherwise, with the handler's context inside it, so the spans a
// handler starts are its children. Both name the queue, the kind and the queue service's
// message id (messaging.message.id), never the envelope id, which a caller may build from
// an entity's keys; a failure is recorded by its class (status and code, sentinel), never
// its text. The worker's Stats are observed as the metrics named by
// the Metric constants while it runs, and every handler run is recorded in the histogram
// MetricHandlerDuration by kind and outcome. Without providers all of this is no-op.
//
// Errors returned by this package wrap the SDK's sentinels, which users import from package
// errs (github.com/tablepatterns/tablepatterns/errs): errs.ErrInvalidInput (with an *errs.InvalidInputError) for input
// refused before any request, errs.ErrTransient when retries ran out, and *errs.ServiceError
// (reaching the *azcore.ResponseError with errors.As) for other refusals.
package queueworker
