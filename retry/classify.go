package retry

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// IsTransient reports whether err is worth retrying: the service was busy, timed out or
// was moving a partition ("Designing a scalable partitioning strategy": "Server Busy" and "Timeout" come from load
// balancing and clear by themselves), or the connection failed.
//
// Transient:
//   - a response (an *azcore.ResponseError, or an *errs.ServiceError carrying the status,
//     which is preferred: it may hold the real code parsed from a transaction body) with
//     status 408, 429, 500, 502, 503, 504 or another 5xx except 501 and 505, or with the
//     code ServerBusy, OperationTimedOut or InternalError whatever the status. "Designing a scalable partitioning strategy"
//     keeps 501 and 505 out of retries and lists 503 and 504 as examples; the storage
//     service uses 500 only for InternalError and OperationTimedOut, both transient, so
//     500 is retried.
//   - io.ErrUnexpectedEOF anywhere in the chain; io.EOF from the HTTP client (inside a
//     *url.Error or *net.OpError: the server closed the connection before answering; a
//     bare io.EOF is not a transport error).
//   - net.ErrClosed from the HTTP client ("use of closed network connection": the server
//     closed a kept-alive connection while the request was being written on it), and
//     net/http's "server closed idle connection" (its FIN crossed the request): Go's
//     transport replays such a request only when it may, never a POST whose body it wrote.
//   - syscall.ECONNRESET, ECONNREFUSED, ECONNABORTED, EPIPE, ETIMEDOUT; a net.Error whose
//     Timeout() is true (an http.Client timeout, a dial or read deadline); a DNS error the
//     resolver marks temporary or timed out.
//
// Never transient: nil, any other status (400, 401, 403, 404, 409, 412, 413, 501, 505,
// and 202 from a failed transaction), errs.ErrInvalidInput, errs.ErrTransient (retries
// already exhausted in a lower layer: retrying again would multiply requests), errors
// azcore marks NonRetriable, context.Canceled, and the context.DeadlineExceeded sentinel
// (IsTransient cannot tell the caller's deadline from a per-try timeout; Do can, see Do).
func IsTransient(err error) bool {
	switch {
	case err == nil,
		errors.Is(err, errs.ErrInvalidInput),
		errors.Is(err, errs.ErrTransient),
		errors.Is(err, context.Canceled),
		chainHas(err, context.DeadlineExceeded):
		return false
	}
	var nr interface{ NonRetriable() }
	if errors.As(err, &nr) {
		return false
	}
	if status, code, ok := statusOf(err); ok {
		return transientStatus(status, code)
	}
	return transientTransport(err)
}

// statusOf returns the HTTP status and error code the error carries, if any.
func statusOf(err error) (status int, code string, ok bool) {
	// An action of a transaction carries its own status and code inside the 202 answer of
	// the $batch: the outermost one that reports a status is the truth.
	var rs interface{ ResponseStatus() (int, string) }
	if errors.As(err, &rs) {
		if status, code := rs.ResponseStatus(); status != 0 {
			return status, code, true
		}
	}
	var se *errs.ServiceError
	if errors.As(err, &se) && se.StatusCode != 0 {
		return se.StatusCode, se.Code, true
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode, re.ErrorCode, true
	}
	return 0, "", false
}

func transientStatus(status int, code string) bool {
	switch code {
	case "ServerBusy", "OperationTimedOut", "InternalError":
		return true
	}
	switch status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests:
		return true
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported:
		return false
	}
	return status >= 500 && status <= 599
}

func transientTransport(err error) bool {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	if closedIdle(err) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		var ue *url.Error
		var oe *net.OpError
		return errors.As(err, &ue) || errors.As(err, &oe)
	}
	for _, e := range []error{syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.ECONNABORTED, syscall.EPIPE, syscall.ETIMEDOUT} {
		if errors.Is(err, e) {
			return true
		}
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.IsTimeout || dns.IsTemporary
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// chainHas reports whether target itself (compared with ==, not errors.Is) is in err's
// chain. An http.Client timeout matches errors.Is(err, context.DeadlineExceeded) but is
// a transport timeout; only the sentinel itself comes from a context.
func chainHas(err, target error) bool {
	return chainAny(err, func(e error) bool { return e == target })
}

// chainAny reports whether an error in err's chain (err itself included) satisfies is.
func chainAny(err error, is func(error) bool) bool {
	for err != nil {
		if is(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if chainAny(e, is) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// serverClosedIdle is the text of net/http's unexported errServerClosedIdle: the server
// closed a kept-alive connection (its FIN crossed the request), which Go's transport
// replays itself only for requests it may (GET, HEAD, ... or a body it never wrote).
const serverClosedIdle = "http: server closed idle connection"

// closedIdle reports net/http's errServerClosedIdle anywhere in err's chain.
func closedIdle(err error) bool {
	return chainAny(err, func(e error) bool { return e.Error() == serverClosedIdle })
}

// MayHaveApplied reports whether a failed attempt leaves open that the service applied the
// request: its answer was lost or says nothing about it. A retry of a non-idempotent write
// (an insert, a conditional update or delete, a transaction) after such a failure may meet
// its own earlier success as a 409, 412 or 404, which only exact tracking can tell from
// another writer's doing (see repo.Options.TrackWrites).
//
// Proved not applied (false): nil; an answer of the service that refuses the request before
// acting on it: 503 ServerBusy, 429 and any other status below 500 except 408; a connection
// that was never made (refused, DNS failure, any dial error); invalid input; a context
// that ended before the attempt.
//
// Left open (true): 500 (InternalError, OperationTimedOut: the operation may have
// completed), 502, 504, 408 and other 5xx except 503; the codes OperationTimedOut and
// InternalError whatever the status; a connection reset, closed or timed out once the
// request may have been written (io.EOF, io.ErrUnexpectedEOF, ECONNRESET, EPIPE,
// net.ErrClosed, a read timeout); any other transport error, because a failure that does
// not prove otherwise must be assumed to have landed.
//
// The answer depends on the status or transport error, never on the operation: callers
// decide what it means for theirs.
func MayHaveApplied(err error) bool {
	switch {
	case err == nil, errors.Is(err, errs.ErrInvalidInput):
		return false
	}
	if status, code, ok := statusOf(err); ok {
		switch code {
		case "OperationTimedOut", "InternalError":
			return true
		case "ServerBusy":
			return false
		}
		switch {
		case status == http.StatusServiceUnavailable, status == http.StatusTooManyRequests:
			return false
		case status == http.StatusRequestTimeout, status >= 500:
			return true
		}
		return false
	}
	if notConnected(err) {
		return false
	}
	return true
}

// notConnected reports a transport error that happened before a connection existed, so
// before any byte of the request was sent: a dial error, a refused connection, a DNS
// failure.
func notConnected(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}
