// Package errs is the one place users import the errors of tablepatterns from: the
// sentinels every package wraps (test them with errors.Is) and the error types that carry
// details (reach them with errors.As).
//
// Every name here is an alias of the SDK's internal error package, not a copy: the values
// are the very variables that repo, codec, retry, queueworker and the pattern packages
// wrap, and the re-exports in those packages (repo.ErrNotFound, codec.ErrInvalidInput,
// retry.ErrTransient, ...) are the same values too, so errors.Is works whichever name a
// caller uses.
//
//	if errors.Is(err, errs.ErrPreconditionFailed) { /* another writer won: re-read */ }
//	var bad *errs.InvalidInputError
//	if errors.As(err, &bad) { log.Print(bad.Field, bad.Limit) } // nothing was sent
//
// ErrOutcomeUnknown deserves its own rule: it is neither success nor "nothing written".
// Re-read the entity and decide again.
package errs

import (
	ierrs "github.com/tablepatterns/tablepatterns/internal/errs"
)

// The sentinels. Every error the SDK returns for one of these conditions wraps the
// sentinel of its condition. One kind of error wraps two: a retry loop that gave up
// (*retry.ExhaustedError) wraps ErrTransient and the error of its last attempt, with that
// error's sentinel if it has one; so a read-modify-write that kept losing races (the
// conflict loop of retry.Optimistic, dataseries, wideentity, largeentity, indexentity...)
// wraps both ErrTransient and ErrPreconditionFailed. Test for the specific condition
// before ErrTransient when both matter.
var (
	// ErrNotFound: the entity, table, queue message or blob does not exist.
	ErrNotFound = ierrs.ErrNotFound
	// ErrAlreadyExists: an insert met an existing entity (or a create an existing resource).
	ErrAlreadyExists = ierrs.ErrAlreadyExists
	// ErrPreconditionFailed: an If-Match ETag no longer matches (another writer won), or a
	// pattern's client-side precondition failed in the same sense.
	ErrPreconditionFailed = ierrs.ErrPreconditionFailed
	// ErrTableBeingDeleted: the table name is still being deleted by the service and cannot
	// be created again yet (real Azure keeps this state for 40 s and more).
	ErrTableBeingDeleted = ierrs.ErrTableBeingDeleted
	// ErrInvalidInput: the input breaks a service limit or rule, or an option is invalid;
	// no request was sent. The error is an *InvalidInputError naming the field and limit.
	ErrInvalidInput = ierrs.ErrInvalidInput
	// ErrTransient: a transient failure (timeout, server busy, connection reset) that
	// persisted after every retry allowed by the policy.
	ErrTransient = ierrs.ErrTransient
	// ErrOutcomeUnknown: a retried non-idempotent write cannot tell whether its earlier,
	// unanswered attempt was applied. Never success, never "nothing written": re-read and
	// decide. repo.Options.TrackWrites recognises the caller's own write exactly.
	ErrOutcomeUnknown = ierrs.ErrOutcomeUnknown
	// ErrDeleteMisaddressed: the store refused a transaction's delete of an entity that is
	// still there unchanged: it addressed another entity (Azurite does for a key holding
	// U+2028 or U+2029). Nothing was written; repo.SubmitOrSplit deletes such a key apart.
	ErrDeleteMisaddressed = ierrs.ErrDeleteMisaddressed
)

// InvalidInputError describes input refused before any request was sent: the type, the
// field, the measured size and the limit it broke, and the rule in words. It unwraps to
// ErrInvalidInput.
type InvalidInputError = ierrs.InvalidInputError

// OutcomeUnknownError is a retried non-idempotent write whose earlier attempt may have been
// applied (Cause) and whose retry met an answer (Err) that this very attempt could explain.
// It unwraps to ErrOutcomeUnknown only (and to the context's error when the context ended),
// never to the answer's sentinel: read Err for the answer.
type OutcomeUnknownError = ierrs.OutcomeUnknownError

// ServiceError is a request the storage service refused. It unwraps to the matching
// sentinel (ErrNotFound, ErrAlreadyExists, ErrPreconditionFailed, ErrTableBeingDeleted;
// none for other codes) and to the underlying *azcore.ResponseError.
type ServiceError = ierrs.ServiceError

// Redact returns err's message with every URL query, SAS signature, account key and
// connection string removed: what may be logged. A nil error gives "".
func Redact(err error) string { return ierrs.Redact(err) }
