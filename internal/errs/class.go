package errs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// Class returns what kind of failure err is, in words that hold none of err's own text:
// the context's error, an unknown outcome, the service's HTTP status and error code
// ("409 EntityAlreadyExists"), the sentinel, the field of invalid input, the kind of a
// transport failure, or else the Go type of the innermost error. An error's text may name
// the keys it is about, and a key may hold a value (an index copy's key holds the indexed
// value): spans, and the logs of operations whose keys are sensitive, record the class
// instead. A loop that gave up (ErrTransient) is prefixed "retries exhausted: ". nil
// gives "".
func Class(err error) string {
	if err == nil {
		return ""
	}
	prefix := ""
	if errors.Is(err, ErrTransient) {
		prefix = "retries exhausted: "
	}
	return prefix + class(err)
}

func class(err error) string {
	var ie *InvalidInputError
	switch {
	case errors.Is(err, context.Canceled):
		return context.Canceled.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded.Error()
	case errors.Is(err, ErrOutcomeUnknown):
		return ErrOutcomeUnknown.Error()
	case errors.As(err, &ie):
		if ie.Field == "" {
			return ErrInvalidInput.Error()
		}
		return fmt.Sprintf("%s: %s", ErrInvalidInput, ie.Field)
	}
	if status, code := statusOf(err); status != 0 {
		if code == "" {
			return fmt.Sprintf("%d", status)
		}
		return fmt.Sprintf("%d %s", status, code)
	}
	for _, s := range []error{ErrNotFound, ErrAlreadyExists, ErrPreconditionFailed, ErrTableBeingDeleted, ErrTransient} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	if t := transport(err); t != "" {
		return t
	}
	return fmt.Sprintf("%T (text withheld)", innermost(err))
}

// statusOf is the status and code of the service's answer err carries: the outermost
// that reports one (a transaction's failed action carries its own inside the 202 of the
// $batch).
func statusOf(err error) (int, string) {
	var rs interface{ ResponseStatus() (int, string) }
	if errors.As(err, &rs) {
		if status, code := rs.ResponseStatus(); status != 0 {
			return status, code
		}
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode, re.ErrorCode
	}
	return 0, ""
}

// transport names a failure of the connection, or "".
func transport(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "transport: connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "transport: connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return "transport: connection closed"
	case errors.As(err, &ne) && ne.Timeout():
		return "transport: timeout"
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return "transport: DNS failure"
	}
	return ""
}

// innermost follows err's first cause to the end.
func innermost(err error) error {
	for {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		case interface{ Unwrap() []error }:
			if es := u.Unwrap(); len(es) > 0 {
				next = es[0]
			}
		}
		if next == nil {
			return err
		}
		err = next
	}
}
