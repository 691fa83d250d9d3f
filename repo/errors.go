package repo

import (
	"fmt"
	"strings"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// The SDK's sentinel errors, shared by every package of tablepatterns. Package errs
// (github.com/tablepatterns/tablepatterns/errs) is where users import them from; these are
// the same values (as are codec.ErrInvalidInput and retry.ErrTransient), so errors.Is works
// whichever name a caller uses.
var (
	// ErrNotFound: the entity or table does not exist.
	ErrNotFound = errs.ErrNotFound
	// ErrAlreadyExists: an insert met an existing entity.
	ErrAlreadyExists = errs.ErrAlreadyExists
	// ErrPreconditionFailed: the entity's ETag no longer matches (another writer won).
	ErrPreconditionFailed = errs.ErrPreconditionFailed
	// ErrTableBeingDeleted: the table name is still being deleted by the service.
	ErrTableBeingDeleted = errs.ErrTableBeingDeleted
	// ErrInvalidInput: the input breaks a service limit or rule; no request was sent.
	ErrInvalidInput = errs.ErrInvalidInput
	// ErrTransient: a transient failure persisted after every retry of the policy.
	ErrTransient = errs.ErrTransient
	// ErrOutcomeUnknown: a retried non-idempotent write cannot tell whether its earlier,
	// unanswered attempt was applied (see Options.TrackWrites for exact detection).
	ErrOutcomeUnknown = errs.ErrOutcomeUnknown
	// ErrDeleteMisaddressed: the store refused a transaction's delete of an entity that is
	// still there unchanged (see MisaddressedDeleteError).
	ErrDeleteMisaddressed = errs.ErrDeleteMisaddressed
)

// InvalidInputError describes input refused before any request was sent; it unwraps to
// ErrInvalidInput and names the field, the size and the limit.
type InvalidInputError = errs.InvalidInputError

// OutcomeUnknownError is the answer of a retried non-idempotent write whose earlier attempt
// may have been applied: it unwraps to ErrOutcomeUnknown (not to the sentinel of the
// service's answer, which is in its Err field: a caller must not read it as a refusal).
type OutcomeUnknownError = errs.OutcomeUnknownError

// Error is a request the service refused. It unwraps to the matching sentinel (ErrNotFound,
// ErrAlreadyExists, ErrPreconditionFailed, ErrTableBeingDeleted) and to the
// *azcore.ResponseError, so both errors.Is and errors.As reach what they look for.
type Error = errs.ServiceError

// ActionError is the failure of one action of an entity group transaction. The whole
// transaction was rolled back. It unwraps to the sentinel of its code (for example
// ErrAlreadyExists for an insert of an existing entity) and to the underlying error.
type ActionError struct {
	// Index is the position of the failed action in the transaction (0-based).
	Index int
	// PartitionKey and RowKey identify the failed action's entity.
	PartitionKey, RowKey string
	// StatusCode and Code are the failed action's HTTP status and service error code, as
	// read from the multipart response body.
	StatusCode int
	Code       string
	// Message is the service's message without the "N:" index prefix.
	Message string
	// Err is the transport-level error (normally an *azcore.ResponseError with status 202
	// or 400), kept so that errors.As still reaches it.
	Err error
}

// Error implements error. It names the action by its index, not by its keys (they are in
// the fields): a transaction's row may be an index copy whose key holds the indexed
// value, and error texts travel into logs and poison records.
func (e *ActionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tablepatterns: transaction action %d failed: %d %s", e.Index, e.StatusCode, e.Code)
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", firstLine(e.Message))
	}
	return b.String()
}

// ResponseStatus returns the failed action's own status and code (not the 202 of the
// $batch that carried them), so that retry classifies a changeset answering 503 ServerBusy
// or 500 OperationTimedOut as transient.
func (e *ActionError) ResponseStatus() (int, string) { return e.StatusCode, e.Code }

// Unwrap returns the sentinel matching Code (if any) and the underlying error.
func (e *ActionError) Unwrap() []error {
	out := make([]error, 0, 2)
	if k := errs.KindOf(e.StatusCode, e.Code); k != nil {
		out = append(out, k)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

func firstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}
