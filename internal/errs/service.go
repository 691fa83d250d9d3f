package errs

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// ServiceError is a request the storage service refused. It unwraps to the matching
// sentinel (ErrNotFound, ErrAlreadyExists, ...; none for other codes) and to the underlying
// error, normally an *azcore.ResponseError, so that both errors.Is and errors.As work.
type ServiceError struct {
	// Op is the operation, e.g. "insert", "get", "transaction".
	Op string
	// Resource is the table, queue or container the operation addressed.
	Resource string
	// PartitionKey and RowKey identify the entity, when there is one.
	PartitionKey, RowKey string
	// StatusCode is the HTTP status of the response (0 if none was received).
	StatusCode int
	// Code is the service's error code, e.g. "EntityAlreadyExists", "UpdateConditionNotSatisfied".
	Code string
	// Kind is the sentinel this error maps to, or nil.
	Kind error
	// Err is the underlying error.
	Err error
}

// Error implements error. It never contains credentials: only names, keys and codes.
func (e *ServiceError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tablepatterns: %s", e.Op)
	if e.Resource != "" {
		fmt.Fprintf(&b, " %s", e.Resource)
	}
	if e.PartitionKey != "" || e.RowKey != "" {
		fmt.Fprintf(&b, " (PartitionKey=%q, RowKey=%q)", e.PartitionKey, e.RowKey)
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": %d", e.StatusCode)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	}
	if e.Kind != nil {
		fmt.Fprintf(&b, " (%v)", e.Kind)
	}
	if c, ok := e.Err.(*clientCheck); ok {
		fmt.Fprintf(&b, ": %s", c.reason)
	} else if e.StatusCode == 0 && e.Err != nil {
		// A transport error (*url.Error) prints the request URL, query and SAS included.
		fmt.Fprintf(&b, ": %s", Redact(e.Err))
	}
	return b.String()
}

// ResponseStatus returns the HTTP status and error code of the service's answer (0 and ""
// when none was received): what retry classifies.
func (e *ServiceError) ResponseStatus() (int, string) { return e.StatusCode, e.Code }

// Unwrap returns the sentinel (if any) and the underlying error.
func (e *ServiceError) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.Err}
	}
	return []error{e.Kind, e.Err}
}

// KindOf maps a service status and error code to a sentinel, or nil.
func KindOf(status int, code string) error {
	switch code {
	case "EntityNotFound", "ResourceNotFound", "TableNotFound", "QueueNotFound",
		"MessageNotFound", "BlobNotFound", "ContainerNotFound":
		return ErrNotFound
	case "EntityAlreadyExists", "TableAlreadyExists", "QueueAlreadyExists",
		"BlobAlreadyExists", "ContainerAlreadyExists":
		return ErrAlreadyExists
	case "UpdateConditionNotSatisfied", "ConditionNotMet":
		return ErrPreconditionFailed
	case "TableBeingDeleted", "QueueBeingDeleted", "ContainerBeingDeleted":
		return ErrTableBeingDeleted
	}
	switch status {
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusPreconditionFailed:
		return ErrPreconditionFailed
	}
	return nil
}

// Wrap turns err (typically from an aztables/azqueue/azblob call) into a *ServiceError with
// the operation's context. nil stays nil; errors that are already ours (invalid input,
// a ServiceError, exhausted retries) are returned unchanged. Context errors are wrapped too
// and stay reachable with errors.Is(err, context.Canceled).
func Wrap(err error, op, resource, pk, rk string) error {
	if err == nil {
		return nil
	}
	var se *ServiceError
	if errors.As(err, &se) || errors.Is(err, ErrInvalidInput) || errors.Is(err, ErrTransient) {
		return err
	}
	out := &ServiceError{Op: op, Resource: resource, PartitionKey: pk, RowKey: rk, Err: err}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		out.StatusCode = re.StatusCode
		out.Code = re.ErrorCode
		out.Kind = KindOf(re.StatusCode, re.ErrorCode)
	}
	return out
}

// clientCheck is the cause of a refusal decided on the client side, before any request:
// its reason is part of the error's text (a service answer's body never is).
type clientCheck struct{ reason string }

func (c *clientCheck) Error() string { return c.reason }

// Precondition returns the error of a conditional write refused on the client side: the
// read that precedes the write showed that the caller's ETag no longer matches the entity
// (PartitionKey pk, RowKey rk), so no write was sent. It is the *ServiceError the service
// would have answered (412 UpdateConditionNotSatisfied, unwrapping to
// ErrPreconditionFailed), and its text ends with reason, which says what changed. Every
// package builds such errors here, never by hand.
func Precondition(op, resource, pk, rk, reason string) *ServiceError {
	return &ServiceError{Op: op, Resource: resource, PartitionKey: pk, RowKey: rk,
		StatusCode: 412, Code: "UpdateConditionNotSatisfied", Kind: ErrPreconditionFailed,
		Err: &clientCheck{reason: reason}}
}
