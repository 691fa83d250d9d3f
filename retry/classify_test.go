package retry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// responseError builds a real *azcore.ResponseError the way the SDK does, from a response
// with the x-ms-error-code header and an OData error body.
func responseError(t testing.TB, status int, code string) error {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "https://acct.table.core.windows.net/people?sv=2023&sig=SECRET", nil)
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"odata.error":{"code":%q,"message":{"lang":"en-US","value":"details AccountKey=SECRET"}}}`, code)
	resp := &http.Response{
		StatusCode: status,
		Status:     fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Header:     http.Header{},
		Body:       io.NopCloser(bytes.NewBufferString(body)),
		Request:    req,
	}
	if code != "" {
		resp.Header.Set("x-ms-error-code", code)
	}
	err = runtime.NewResponseError(resp)
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != status || re.ErrorCode != code {
		t.Fatalf("NewResponseError gave %#v", err)
	}
	return err
}

type nonRetriable struct{ error }

func (nonRetriable) NonRetriable() {}

func TestIsTransientResponses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		code   string
		want   bool
	}{
		{http.StatusRequestTimeout, "", true},
		{http.StatusTooManyRequests, "TooManyRequests", true},
		{http.StatusInternalServerError, "OperationTimedOut", true},
		{http.StatusInternalServerError, "InternalError", true},
		{http.StatusInternalServerError, "", true},
		{http.StatusBadGateway, "", true},
		{http.StatusServiceUnavailable, "ServerBusy", true},
		{http.StatusGatewayTimeout, "", true},
		{http.StatusAccepted, "", false}, // a failed entity group transaction
		{http.StatusBadRequest, "InvalidInput", false},
		{http.StatusBadRequest, "OutOfRangeInput", false},
		{http.StatusUnauthorized, "", false},
		{http.StatusForbidden, "AuthenticationFailed", false},
		{http.StatusNotFound, "ResourceNotFound", false},
		{http.StatusConflict, "EntityAlreadyExists", false},
		{http.StatusConflict, "TableBeingDeleted", false},
		{http.StatusPreconditionFailed, "UpdateConditionNotSatisfied", false},
		{http.StatusRequestEntityTooLarge, "RequestBodyTooLarge", false},
		{http.StatusNotImplemented, "", false},
		{http.StatusHTTPVersionNotSupported, "", false},
	}
	for _, tt := range tests {
		err := responseError(t, tt.status, tt.code)
		for _, e := range []error{
			err,
			fmt.Errorf("insert: %w", err),
			errs.Wrap(err, "insert", "people", "pk", "rk"),
		} {
			if got := IsTransient(e); got != tt.want {
				t.Errorf("IsTransient(%d %s as %T) = %v, want %v", tt.status, tt.code, e, got, tt.want)
			}
		}
	}
	// A ServiceError carrying the real status of a failed transaction action wins over the
	// 202 of the batch response.
	busy := &errs.ServiceError{Op: "transaction", StatusCode: 503, Code: "ServerBusy", Err: responseError(t, 202, "")}
	if !IsTransient(busy) {
		t.Error("IsTransient(ServiceError 503 over 202) = false")
	}
	if IsTransient(nonRetriable{responseError(t, 503, "ServerBusy")}) {
		t.Error("IsTransient(NonRetriable) = true")
	}
}

func TestIsTransientErrors(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", errors.New("boom"), false},
		{"unexpected EOF", fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), true},
		{"EOF from client", &url.Error{Op: "Post", URL: "https://x", Err: io.EOF}, true},
		{"EOF from conn", &net.OpError{Op: "read", Net: "tcp", Err: io.EOF}, true},
		{"bare EOF", io.EOF, false},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{"closed while writing", closedWhileWriting(), true},
		{"bare closed", net.ErrClosed, false},
		{"server closed idle", closedIdleConn(), true},
		{"refused", &url.Error{Op: "Get", URL: "https://x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}, true},
		{"broken pipe", fmt.Errorf("write: %w", syscall.EPIPE), true},
		{"aborted", syscall.ECONNABORTED, true},
		{"i/o timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, true},
		{"dns temporary", &net.DNSError{Err: "server misbehaving", Name: "x", IsTemporary: true}, true},
		{"dns timeout", &net.DNSError{Err: "timeout", Name: "x", IsTimeout: true}, true},
		{"dns not found", &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}, false},
		{"canceled", context.Canceled, false},
		{"canceled in client", &url.Error{Op: "Get", URL: "https://x", Err: context.Canceled}, false},
		{"caller deadline", ctx.Err(), false},
		{"caller deadline in client", &url.Error{Op: "Get", URL: "https://x", Err: context.DeadlineExceeded}, false},
		{"invalid input", errs.Invalid("RowKey", "bad"), false},
		{"exhausted below", &ExhaustedError{Err: responseError(t, 503, "ServerBusy")}, false},
		{"transient sentinel", fmt.Errorf("x: %w", errs.ErrTransient), false},
		{"joined reset and canceled", errors.Join(syscall.ECONNRESET, context.Canceled), false},
	}
	for _, tt := range tests {
		if got := IsTransient(tt.err); got != tt.want {
			t.Errorf("%s: IsTransient(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// TestIsTransientRealTransport classifies errors produced by net/http itself.
func TestIsTransientRealTransport(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	client := &http.Client{Timeout: 20 * time.Millisecond}
	_, err := client.Get(slow.URL)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("client timeout error = %v, want one matching context.DeadlineExceeded", err)
	}
	if !IsTransient(err) {
		t.Errorf("IsTransient(http.Client timeout %v) = false", err)
	}

	hangup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer hangup.Close()
	_, err = http.Post(hangup.URL, "text/plain", bytes.NewBufferString("x"))
	if err == nil || !IsTransient(err) {
		t.Errorf("IsTransient(server hung up: %v) = false", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = http.Get("http://" + addr)
	if err == nil || !IsTransient(err) {
		t.Errorf("IsTransient(connection refused: %v) = false", err)
	}
}

// closedWhileWriting is the error Go's HTTP client returns when the server closes a
// kept-alive connection while a POST's body is being written on it, as CI met it against
// Azurite (whose keep-alive timeout is 5 s): "Post URL: readfrom tcp A->B: write tcp A->B:
// use of closed network connection".
func closedWhileWriting() error {
	return &url.Error{Op: "Post", URL: "http://127.0.0.1:1/devstoreaccount1/$batch", Err: &net.OpError{
		Op: "readfrom", Net: "tcp", Err: &net.OpError{Op: "write", Net: "tcp", Err: net.ErrClosed},
	}}
}

// closedIdleConn is net/http's errServerClosedIdle as the client returns it for a POST
// whose body it wrote on a kept-alive connection that the server had just closed.
func closedIdleConn() error {
	return fmt.Errorf("transaction: %w", &url.Error{Op: "Post", URL: "http://127.0.0.1:1/devstoreaccount1/$batch", Err: errors.New("http: server closed idle connection")})
}

// MayHaveApplied leaves open every failure that does not prove the request unsent, and
// closes only refusals by the service and connections never made.
func TestMayHaveApplied(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"invalid input", errs.Invalid("RowKey", "bad"), false},
		{"server busy", responseError(t, 503, "ServerBusy"), false},
		{"429", responseError(t, 429, ""), false},
		{"409", responseError(t, 409, "EntityAlreadyExists"), false},
		{"500 timed out", responseError(t, 500, "OperationTimedOut"), true},
		{"500 internal", responseError(t, 500, "InternalError"), true},
		{"502", responseError(t, 502, ""), true},
		{"408", responseError(t, 408, ""), true},
		{"refused", &url.Error{Op: "Post", URL: "https://x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}, false},
		{"dns", &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}, false},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{"EOF", &url.Error{Op: "Post", URL: "https://x", Err: io.EOF}, true},
		{"closed while writing", closedWhileWriting(), true},
		{"server closed idle", closedIdleConn(), true},
		{"other", errors.New("boom"), true},
	}
	for _, tt := range tests {
		if got := MayHaveApplied(tt.err); got != tt.want {
			t.Errorf("%s: MayHaveApplied(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}
