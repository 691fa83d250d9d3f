package retry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// fastPolicy retries n times with waits of a few milliseconds.
func fastPolicy(n int, logger *zap.Logger) Policy {
	return Policy{Delay: time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 3 * time.Millisecond, MaxRetries: n, Logger: logger}
}

func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(core), logs
}

var testOp = Op{Name: "insert", Resource: "people", PartitionKey: "Sales", RowKey: "000123"}

func TestDoSucceedsAfterFailures(t *testing.T) {
	t.Parallel()
	logger, logs := observed()
	var attempts []int
	err := Do(context.Background(), fastPolicy(5, logger), testOp, func(ctx context.Context, attempt int) error {
		attempts = append(attempts, attempt)
		if attempt <= 3 {
			return responseError(t, http.StatusServiceUnavailable, "ServerBusy")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do = %v", err)
	}
	if fmt.Sprint(attempts) != "[1 2 3 4]" {
		t.Errorf("attempts = %v", attempts)
	}
	if n := logs.Len(); n != 3 {
		t.Errorf("%d log entries, want 3 (one per retry, none after success)", n)
	}
	for i, e := range logs.All() {
		if e.Level != zap.WarnLevel || e.Message != "retrying" {
			t.Errorf("entry %d: %v %q", i, e.Level, e.Message)
		}
		if got := e.ContextMap()["attempt"]; got != int64(i+1) {
			t.Errorf("entry %d: attempt = %v", i, got)
		}
	}
}

func TestDoValue(t *testing.T) {
	t.Parallel()
	v, err := DoValue(context.Background(), fastPolicy(2, nil), testOp, func(ctx context.Context, attempt int) (string, error) {
		if attempt == 1 {
			return "", &url.Error{Op: "Get", URL: "https://x", Err: errTimeout{}}
		}
		return "etag-2", nil
	})
	if err != nil || v != "etag-2" {
		t.Fatalf("DoValue = %q, %v", v, err)
	}
	v, err = DoValue(context.Background(), fastPolicy(2, nil), testOp, func(ctx context.Context, attempt int) (string, error) {
		return "partial", errs.ErrNotFound
	})
	if err != errs.ErrNotFound || v != "" {
		t.Fatalf("DoValue on failure = %q, %v; want zero value and the error", v, err)
	}
}

type errTimeout struct{}

func (errTimeout) Error() string   { return "timeout" }
func (errTimeout) Timeout() bool   { return true }
func (errTimeout) Temporary() bool { return true }

func TestDoNonRetryableReturnedAsIs(t *testing.T) {
	t.Parallel()
	logger, logs := observed()
	want := errs.Wrap(responseError(t, http.StatusConflict, "EntityAlreadyExists"), "insert", "people", "Sales", "000123")
	calls := 0
	err := Do(context.Background(), fastPolicy(5, logger), testOp, func(ctx context.Context, attempt int) error {
		calls++
		return want
	})
	if err != want {
		t.Fatalf("Do = %v, want the error itself", err)
	}
	var ex *ExhaustedError
	if calls != 1 || errors.As(err, &ex) || errors.Is(err, ErrTransient) || logs.Len() != 0 {
		t.Errorf("calls %d, exhausted %v, logs %d", calls, errors.As(err, &ex), logs.Len())
	}
}

func TestDoExhausted(t *testing.T) {
	t.Parallel()
	calls := 0
	err := Do(context.Background(), fastPolicy(2, nil), testOp, func(ctx context.Context, attempt int) error {
		calls++
		return responseError(t, http.StatusServiceUnavailable, "ServerBusy")
	})
	var ex *ExhaustedError
	if !errors.As(err, &ex) {
		t.Fatalf("Do = %v, want *ExhaustedError", err)
	}
	if calls != 3 || ex.Attempts != 3 || ex.Op.Name != "insert" {
		t.Errorf("calls %d, Attempts %d, Op %+v", calls, ex.Attempts, ex.Op)
	}
	var re *azcore.ResponseError
	if !errors.Is(err, ErrTransient) || !errors.Is(err, errs.ErrTransient) || !errors.As(err, &re) || re.ErrorCode != "ServerBusy" {
		t.Errorf("exhausted error does not unwrap to both: %v", err)
	}
	if IsTransient(err) {
		t.Error("an exhausted error must not be retried again by an outer layer")
	}
	if s := err.Error(); strings.Contains(s, "SECRET") || !strings.Contains(s, "3 attempts") || !strings.Contains(s, "503") {
		t.Errorf("Error() = %q", s)
	}

	calls = 0
	err = Do(context.Background(), NoRetry(), testOp, func(ctx context.Context, attempt int) error {
		calls++
		return responseError(t, http.StatusServiceUnavailable, "ServerBusy")
	})
	if !errors.As(err, &ex) || calls != 1 {
		t.Errorf("NoRetry: calls %d, err %v", calls, err)
	}
}

func TestDoMaxElapsed(t *testing.T) {
	t.Parallel()
	p := Policy{Delay: Off, MinDelay: 20 * time.Millisecond, MaxRetries: 1000, MaxElapsed: 50 * time.Millisecond}
	calls := 0
	err := Do(context.Background(), p, testOp, func(ctx context.Context, attempt int) error {
		calls++
		return errTimeout{}
	})
	var ex *ExhaustedError
	if !errors.As(err, &ex) || calls < 2 || calls > 4 {
		t.Fatalf("Do = %v after %d calls, want *ExhaustedError after 2 to 3", err, calls)
	}
}

func TestDoSemanticRetry(t *testing.T) {
	t.Parallel()
	op := testOp
	op.Retryable = func(err error) bool { return errors.Is(err, errs.ErrPreconditionFailed) || IsTransient(err) }
	calls := 0
	err := Do(context.Background(), fastPolicy(5, nil), op, func(ctx context.Context, attempt int) error {
		calls++
		if attempt < 3 {
			return errs.Wrap(responseError(t, http.StatusPreconditionFailed, "UpdateConditionNotSatisfied"), "update", "people", "Sales", "000123")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Do = %v after %d calls", err, calls)
	}
	err = Do(context.Background(), fastPolicy(1, nil), op, func(ctx context.Context, attempt int) error {
		return errs.Wrap(responseError(t, http.StatusPreconditionFailed, "UpdateConditionNotSatisfied"), "update", "people", "Sales", "000123")
	})
	if !errors.Is(err, ErrTransient) || !errors.Is(err, errs.ErrPreconditionFailed) {
		t.Fatalf("semantic exhaustion = %v, want ErrTransient and ErrPreconditionFailed", err)
	}
}

func TestDoPerTryTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	err := Do(context.Background(), fastPolicy(3, nil), testOp, func(ctx context.Context, attempt int) error {
		if attempt == 1 {
			tctx, cancel := context.WithTimeout(ctx, 0)
			defer cancel()
			<-tctx.Done()
			return &url.Error{Op: "Get", URL: "https://x", Err: tctx.Err()}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do = %v, want the per-try timeout retried", err)
	}
}

func TestDoCancelDuringWait(t *testing.T) {
	t.Parallel()
	waiting := make(chan struct{})
	core, _ := observer.New(zapcore.DebugLevel)
	// The retry is logged just before the wait starts.
	logger := zap.New(zapcore.RegisterHooks(core, func(zapcore.Entry) error { close(waiting); return nil }))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := Policy{Delay: time.Hour, MinDelay: time.Hour, MaxDelay: time.Hour, MaxElapsed: Off, Logger: logger}
	done := make(chan error, 1)
	go func() {
		done <- Do(ctx, p, testOp, func(ctx context.Context, attempt int) error {
			return responseError(t, http.StatusServiceUnavailable, "ServerBusy")
		})
	}()
	<-waiting
	cancel()
	err := <-done // a Do that ignores the cancel hangs until go test -timeout
	var re *azcore.ResponseError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &re) || errors.Is(err, ErrTransient) {
		t.Fatalf("Do = %v, want context.Canceled wrapping the last error", err)
	}
	if IsTransient(err) {
		t.Error("a canceled Do is transient")
	}
}

func TestDoContextDoneBeforeStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	err := Do(ctx, Policy{}, testOp, func(ctx context.Context, attempt int) error { called = true; return nil })
	if called || !errors.Is(err, context.Canceled) {
		t.Fatalf("called %v, Do = %v", called, err)
	}
}

func TestDoDeadlineShorterThanWait(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := Policy{Delay: time.Hour, MaxDelay: time.Hour, MaxElapsed: Off}
	start := time.Now()
	err := Do(ctx, p, testOp, func(ctx context.Context, attempt int) error {
		return responseError(t, http.StatusServiceUnavailable, "ServerBusy")
	})
	// Returned with the deadline still ahead: it gave up at once, knowing the hour's wait
	// would outlast it, rather than wait until the deadline (a minute is far more than a
	// loaded machine needs for one call, and no fixed gap is asserted).
	var ex *ExhaustedError
	if !errors.As(err, &ex) || ex.Attempts != 1 || ctx.Err() != nil {
		t.Fatalf("Do = %v after %v (context %v), want an *ExhaustedError before the deadline", err, time.Since(start), ctx.Err())
	}
}

func TestDoInvalidPolicy(t *testing.T) {
	t.Parallel()
	called := false
	err := Do(context.Background(), Policy{MaxRetries: -7}, testOp, func(ctx context.Context, attempt int) error { called = true; return nil })
	if called || !errors.Is(err, errs.ErrInvalidInput) {
		t.Fatalf("called %v, Do = %v", called, err)
	}
}

func TestDoRetryAfter(t *testing.T) {
	t.Parallel()
	logger, logs := observed()
	throttled := responseError(t, http.StatusTooManyRequests, "TooManyRequests")
	var re *azcore.ResponseError
	errors.As(throttled, &re)
	re.RawResponse.Header.Set("x-ms-retry-after-ms", "25")
	p := Policy{Delay: time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 40 * time.Millisecond, MaxRetries: 1, Logger: logger}
	var calls atomic.Int32
	_ = Do(context.Background(), p, testOp, func(ctx context.Context, attempt int) error {
		if calls.Add(1) == 1 {
			return throttled
		}
		return nil
	})
	if logs.Len() != 1 {
		t.Fatalf("%d log entries", logs.Len())
	}
	if d := logs.All()[0].ContextMap()["delay"]; d != 25*time.Millisecond {
		t.Errorf("delay = %v, want the 25ms the service asked for", d)
	}
}

// TestDoLogsNoSecrets checks the fields of a retry entry and that credentials in error
// texts (SAS in a URL, an account key in a connection string, a response body) never
// reach the log or the returned error's text.
func TestDoLogsNoSecrets(t *testing.T) {
	t.Parallel()
	logger, logs := observed()
	failures := []error{
		&url.Error{Op: "Put", URL: "https://acct.table.core.windows.net/people(PartitionKey='Sales',RowKey='000123')?sv=2023-11-03&se=2030&sig=SECRET%3D&sp=raud", Err: errTimeout{}},
		fmt.Errorf("using DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=SECRET+/==;EndpointSuffix=core.windows.net: %w", errTimeout{}),
		fmt.Errorf("SharedAccessSignature=sv=2023&sig=SECRET with Authorization: SharedKey acct:SECRET= and Bearer SECRET.x.y: %w", errTimeout{}),
		fmt.Errorf("update: %w", responseError(t, http.StatusServiceUnavailable, "ServerBusy")),
	}
	err := Do(context.Background(), fastPolicy(len(failures)-1, logger), testOp, func(ctx context.Context, attempt int) error {
		return failures[attempt-1]
	})
	if !errors.Is(err, ErrTransient) {
		t.Fatalf("Do = %v", err)
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Errorf("returned error text leaks: %s", err)
	}
	entries := logs.All()
	if len(entries) != len(failures)-1 {
		t.Fatalf("%d entries, want %d", len(entries), len(failures)-1)
	}
	for i, e := range entries {
		m := e.ContextMap()
		for _, k := range []string{"op", "resource", "partitionKey", "rowKey", "attempt", "delay", "status", "errorCode", "error"} {
			if _, ok := m[k]; !ok {
				t.Errorf("entry %d has no field %q: %v", i, k, m)
			}
		}
		if m["op"] != "insert" || m["resource"] != "people" || m["partitionKey"] != "Sales" || m["rowKey"] != "000123" {
			t.Errorf("entry %d: %v", i, m)
		}
		if s := fmt.Sprint(m); strings.Contains(s, "SECRET") {
			t.Errorf("entry %d leaks a secret: %s", i, s)
		}
		if !strings.Contains(m["error"].(string), "REDACTED") {
			t.Errorf("entry %d: error %q shows no redaction", i, m["error"])
		}
	}
	if m := entries[0].ContextMap(); !strings.Contains(m["error"].(string), "https://acct.table.core.windows.net/people") {
		t.Errorf("the URL path should stay for debugging: %q", m["error"])
	}
	// The last failure is only in the returned error; check a response error entry too.
	_ = Do(context.Background(), fastPolicy(1, logger), testOp, func(ctx context.Context, attempt int) error {
		return fmt.Errorf("update: %w", responseError(t, http.StatusServiceUnavailable, "ServerBusy"))
	})
	last := logs.All()[logs.Len()-1].ContextMap()
	if last["status"] != int64(503) || last["errorCode"] != "ServerBusy" || strings.Contains(fmt.Sprint(last), "SECRET") {
		t.Errorf("response error entry: %v", last)
	}
}
