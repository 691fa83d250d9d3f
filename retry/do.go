package retry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/cenkalti/backoff/v4"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Op describes the operation Do retries, for its log entries and errors.
type Op struct {
	// Name is the operation: "insert", "get", "transaction", "enqueue", ...
	Name string
	// Resource is the table, queue or container name.
	Resource string
	// PartitionKey and RowKey identify the entity, when there is one.
	PartitionKey, RowKey string
	// SensitiveKeys marks an operation whose keys, or the texts of whose errors, may hold
	// a value that must not leave the process: an index copy's key holds the indexed
	// value, and an error about a row names its keys. Do's log entries and the texts of
	// the errors Do returns then withhold PartitionKey and RowKey and give each error's
	// class (its HTTP status and service error code, or its sentinel) instead of its text.
	// Do also treats the operation as sensitive when ctx is marked by WithSensitiveKeys,
	// and marks the ctx it passes to fn, so that the requests fn makes through repo
	// withhold their keys too.
	SensitiveKeys bool
	// Retryable decides which errors are retried. nil means IsTransient, plus a
	// context.DeadlineExceeded that arrives while Do's ctx is still live (a per-try
	// timeout). Set it for semantic retries, e.g. errs.ErrPreconditionFailed in a
	// read-modify-write loop or errs.ErrAlreadyExists in a creation race; compose with
	// IsTransient to keep the transient ones.
	Retryable func(error) bool
}

// String is "name resource (PartitionKey=..., RowKey=...)", for messages; with
// SensitiveKeys, "name resource (keys withheld)".
func (o Op) String() string {
	var b strings.Builder
	b.WriteString(o.Name)
	if o.Resource != "" {
		b.WriteString(" ")
		b.WriteString(o.Resource)
	}
	switch {
	case o.SensitiveKeys && (o.PartitionKey != "" || o.RowKey != ""):
		b.WriteString(" (keys withheld)")
	case o.PartitionKey != "" || o.RowKey != "":
		fmt.Fprintf(&b, " (PartitionKey=%q, RowKey=%q)", o.PartitionKey, o.RowKey)
	}
	return b.String()
}

// text is err's text as o may show it: the redacted text, or only the class when o's
// keys are sensitive (the text may name them).
func (o Op) text(err error) string {
	if o.SensitiveKeys {
		return errs.Class(err)
	}
	return sanitize(err)
}

type sensitiveKeysKey struct{}

// WithSensitiveKeys returns ctx marked so that every Do and Optimistic under it treats its
// Op as SensitiveKeys: the way a pattern makes the reads and writes it sends through repo
// (which builds their Op) withhold keys that hold indexed values.
func WithSensitiveKeys(ctx context.Context) context.Context {
	if sensitiveKeys(ctx) {
		return ctx
	}
	return context.WithValue(ctx, sensitiveKeysKey{}, true)
}

func sensitiveKeys(ctx context.Context) bool {
	v, _ := ctx.Value(sensitiveKeysKey{}).(bool)
	return v
}

// ExhaustedError is returned by Do when the operation kept failing with retryable errors
// until the policy gave up. It unwraps to both ErrTransient and the last error, so that
// errors.Is(err, retry.ErrTransient) and errors.As(err, &azcoreResponseError) both work.
type ExhaustedError struct {
	// Op is the operation that was retried.
	Op Op
	// Attempts is how many times fn was called.
	Attempts int
	// Err is the last error fn returned.
	Err error
}

// Error implements error. Its text holds no URL query, signature or key (the last error's
// text is sanitized as in the log entries, and reduced to its class when Op.SensitiveKeys).
func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("tablepatterns: %s: gave up after %d attempts: %s", e.Op, e.Attempts, e.Op.text(e.Err))
}

// Unwrap returns ErrTransient and the last error.
func (e *ExhaustedError) Unwrap() []error { return []error{ErrTransient, e.Err} }

// interruptedError is returned when the context ends between attempts; it unwraps to the
// context's error and to the last error of fn.
type interruptedError struct {
	op       Op
	attempts int
	ctxErr   error
	last     error
}

func (e *interruptedError) Error() string {
	return fmt.Sprintf("tablepatterns: %s: %v after %d attempts; last error: %s", e.op, e.ctxErr, e.attempts, e.op.text(e.last))
}

func (e *interruptedError) Unwrap() []error { return []error{e.ctxErr, e.last} }

// Do calls fn until it succeeds, then returns nil. attempt is 1 for the first call. fn
// receives Do's ctx and must use it for its I/O.
//
// It stops and returns:
//   - fn's error as it is (never wrapped) when op.Retryable (IsTransient by default)
//     says it is not retryable;
//   - an *ExhaustedError wrapping the last error when the policy is exhausted
//     (MaxRetries, MaxElapsed), and also when the next wait would end after ctx's
//     deadline (waiting could only end in context.DeadlineExceeded);
//   - ctx.Err() itself, without calling fn, when ctx is already done; an error wrapping
//     both ctx.Err() and the last error when ctx ends during a wait or during a
//     retryable failure (errors.Is(err, context.Canceled) and errors.As to the
//     *azcore.ResponseError both work). A wait is a timer that stops as soon as ctx is
//     done;
//   - an *errs.InvalidInputError, without calling fn, when p is invalid (see Validate).
//
// Before each retry it logs one Warn entry "retrying" through p.Logger with the fields
// op, resource, partitionKey, rowKey, attempt (the attempt that failed), delay, status and
// errorCode (0 and "" for transport errors) and error (the text without URL queries,
// signatures, keys or response bodies). For an op with SensitiveKeys (or under a ctx
// marked by WithSensitiveKeys) it logs keysWithheld instead of partitionKey and rowKey,
// and the error's class (errs.Class) instead of its text. It logs nothing else: the final
// error is returned, not logged. When the response carries Retry-After (or x-ms-retry-after-ms), the wait is
// at least that long, up to MaxDelay.
//
// Every attempt and every wait is recorded as OpenTelemetry metrics (MetricAttempts,
// MetricWait) through p.MeterProvider, the global provider when it is nil.
//
// fn may run more than once for one logical operation, including after a failure whose
// request did reach the service (a lost response): an insert retried after a timeout may
// meet 409 because its first try succeeded. fn can tell from attempt > 1.
func Do(ctx context.Context, p Policy, op Op, fn func(ctx context.Context, attempt int) error) error {
	_, err := DoValue(ctx, p, op, func(ctx context.Context, attempt int) (struct{}, error) {
		return struct{}{}, fn(ctx, attempt)
	})
	return err
}

// DoValue is Do for an operation that returns a value: it returns fn's value from the
// successful attempt, or the zero value of T and the error Do would return.
func DoValue[T any](ctx context.Context, p Policy, op Op, fn func(ctx context.Context, attempt int) (T, error)) (T, error) {
	var zero T
	if err := p.Validate(); err != nil {
		return zero, err
	}
	p = p.WithDefaults()
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if op.SensitiveKeys || sensitiveKeys(ctx) {
		op.SensitiveKeys = true
		ctx = WithSensitiveKeys(ctx)
	}
	retryable := op.Retryable
	if retryable == nil {
		retryable = func(err error) bool { return IsTransient(err) || perTryTimeout(ctx, err) }
	}
	b := p.NewBackOff()
	m := instrumentsOf(p.MeterProvider)
	for attempt := 1; ; attempt++ {
		v, err := fn(ctx, attempt)
		if err == nil {
			m.attempt(ctx, op, nil, outcomeSuccess)
			return v, nil
		}
		if !retryable(err) {
			m.attempt(ctx, op, err, outcomeFailed)
			return zero, err
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			m.attempt(ctx, op, err, outcomeInterrupted)
			return zero, &interruptedError{op: op, attempts: attempt, ctxErr: ctxErr, last: err}
		}
		delay := b.NextBackOff()
		if delay == backoff.Stop {
			m.attempt(ctx, op, err, outcomeExhausted)
			return zero, &ExhaustedError{Op: op, Attempts: attempt, Err: err}
		}
		if ra := retryAfter(err); ra > delay {
			delay = ra
			if p.MaxDelay > 0 {
				delay = min(delay, p.MaxDelay)
			}
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < delay {
			m.attempt(ctx, op, err, outcomeExhausted)
			return zero, &ExhaustedError{Op: op, Attempts: attempt, Err: err}
		}
		m.attempt(ctx, op, err, outcomeRetried)
		m.waited(ctx, op, err, delay)
		logRetry(p.Logger, op, attempt, delay, err)
		if ctxErr := wait(ctx, delay); ctxErr != nil {
			return zero, &interruptedError{op: op, attempts: attempt, ctxErr: ctxErr, last: err}
		}
	}
}

// perTryTimeout reports a context.DeadlineExceeded that did not come from ctx: ctx is
// still live, so an inner deadline (a per-try timeout) expired.
func perTryTimeout(ctx context.Context, err error) bool {
	return ctx.Err() == nil &&
		errors.Is(err, context.DeadlineExceeded) &&
		!errors.Is(err, context.Canceled) &&
		!errors.Is(err, errs.ErrTransient) &&
		!errors.Is(err, errs.ErrInvalidInput)
}

// wait blocks for d or until ctx is done, whichever comes first.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func logRetry(l *zap.Logger, op Op, attempt int, delay time.Duration, err error) {
	if ce := l.Check(zap.WarnLevel, "retrying"); ce != nil {
		status, code, _ := statusOf(err)
		fields := make([]zap.Field, 0, 9)
		fields = append(fields, zap.String("op", op.Name), zap.String("resource", op.Resource))
		if op.SensitiveKeys {
			fields = append(fields, zap.Bool("keysWithheld", true))
		} else {
			fields = append(fields, zap.String("partitionKey", op.PartitionKey), zap.String("rowKey", op.RowKey))
		}
		ce.Write(append(fields,
			zap.Int("attempt", attempt),
			zap.Duration("delay", delay),
			zap.Int("status", status),
			zap.String("errorCode", code),
			zap.String("error", op.text(err)),
		)...)
	}
}

// maxRetryAfterMS ignores absurd Retry-After values (a day) rather than overflowing.
const maxRetryAfterMS = 24 * 3600 * 1000

// retryAfter returns the wait the service asked for in a throttling response, or 0.
func retryAfter(err error) time.Duration {
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.RawResponse == nil {
		return 0
	}
	h := re.RawResponse.Header
	for _, name := range []string{"x-ms-retry-after-ms", "retry-after-ms"} {
		if ms, err := strconv.ParseFloat(h.Get(name), 64); err == nil && ms > 0 && ms < maxRetryAfterMS {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 && s < maxRetryAfterMS/1000 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
