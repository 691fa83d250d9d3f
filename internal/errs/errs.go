// Package errs holds the one set of sentinel errors and error types of the whole SDK.
//
// It lives under internal so that the leaf packages (codec, retry) can share it without
// importing each other; users reach the same values through package errs
// (github.com/tablepatterns/tablepatterns/errs), whose names are aliases of these, and
// through the re-exports in those packages (repo.ErrNotFound, codec.ErrInvalidInput,
// retry.ErrTransient). Because they are the same variables, errors.Is works whichever
// package a caller names. Docs name the public package, never this one.
package errs

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// The sentinels. Every error the SDK returns for one of these conditions wraps the sentinel
// of its condition, so that callers test with errors.Is and never parse messages. A retry
// loop that gave up (retry's ExhaustedError) wraps ErrTransient and its last attempt's
// error, so an exhausted conflict loop wraps ErrTransient and ErrPreconditionFailed.
var (
	// ErrNotFound: the entity, table, queue message or blob does not exist.
	ErrNotFound = errors.New("tablepatterns: not found")
	// ErrAlreadyExists: an insert met an existing entity (or a create met an existing resource).
	ErrAlreadyExists = errors.New("tablepatterns: already exists")
	// ErrPreconditionFailed: an If-Match ETag no longer matches (another writer won).
	ErrPreconditionFailed = errors.New("tablepatterns: precondition failed (ETag mismatch)")
	// ErrTableBeingDeleted: the table name is still being deleted by the service and cannot
	// be created again yet (real Azure keeps this state for 40 s and more).
	ErrTableBeingDeleted = errors.New("tablepatterns: table being deleted")
	// ErrInvalidInput: the input breaks a service limit or rule; no request was sent.
	ErrInvalidInput = errors.New("tablepatterns: invalid input")
	// ErrTransient: a transient failure (timeout, server busy, connection reset) that
	// persisted after every retry allowed by the policy.
	ErrTransient = errors.New("tablepatterns: transient failure, retries exhausted")
	// ErrOutcomeUnknown: a non-idempotent write (an insert, a conditional update or delete,
	// an entity group transaction) met a failure that may have been applied (a timeout or a
	// reset after the request was written, 500, 502, 504), and its retry met an answer
	// (409, 412, 404) that either its own earlier success or another writer could have
	// caused. The SDK cannot tell which without write tracking (repo.Options.TrackWrites),
	// so it reports neither success nor the refusal: re-read and decide.
	ErrOutcomeUnknown = errors.New("tablepatterns: outcome unknown (a lost response may hide an applied write)")
	// ErrDeleteMisaddressed: the store refused a transaction's delete (400, 404, 412) while
	// the entity is still there with the ETag the delete named, so it misaddressed the
	// delete (Azurite does for a key holding U+2028 or U+2029). Nothing was written.
	ErrDeleteMisaddressed = errors.New("tablepatterns: the store misaddressed a transaction's delete")
)

// InvalidInputError describes input refused before any request was sent. It unwraps to
// ErrInvalidInput.
//
// Fields that do not apply are left empty or zero: a table name error has no Type, a
// malformed key has no Limit.
type InvalidInputError struct {
	// Type is the Go type being encoded, if any (e.g. "main.Employee").
	Type string
	// Field names what broke the rule: a struct field, a property name, "PartitionKey",
	// "RowKey", "table name", "transaction", ...
	Field string
	// Size is the measured size of the offending value in the unit of Limit
	// (bytes, UTF-16 code units, count of properties or actions).
	Size int
	// Limit is the service limit that was exceeded, in the same unit as Size.
	Limit int
	// Reason says what rule was broken, in words.
	Reason string
}

// Error implements error.
func (e *InvalidInputError) Error() string {
	var b strings.Builder
	b.WriteString("tablepatterns: invalid input")
	if e.Type != "" {
		b.WriteString(": ")
		b.WriteString(e.Type)
	}
	if e.Field != "" {
		if e.Type != "" {
			b.WriteByte('.')
		} else {
			b.WriteString(": ")
		}
		b.WriteString(e.Field)
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Limit > 0 {
		fmt.Fprintf(&b, " (size %d, limit %d)", e.Size, e.Limit)
	}
	return b.String()
}

// Unwrap returns ErrInvalidInput.
func (e *InvalidInputError) Unwrap() error { return ErrInvalidInput }

// Invalid is a short constructor for an InvalidInputError without sizes.
func Invalid(field, reasonFormat string, args ...any) *InvalidInputError {
	return &InvalidInputError{Field: field, Reason: fmt.Sprintf(reasonFormat, args...)}
}

// TooLarge is a short constructor for an InvalidInputError about a size limit.
func TooLarge(field, reason string, size, limit int) *InvalidInputError {
	return &InvalidInputError{Field: field, Reason: reason, Size: size, Limit: limit}
}

// OutcomeUnknownError is a non-idempotent write whose outcome cannot be known: an earlier
// attempt failed in a way that leaves open whether the service applied it (Cause), and the
// retry met an answer (Err) that the earlier attempt's own success could explain, or the
// retries ended. It unwraps to ErrOutcomeUnknown only (and to the context's error when the
// context ended): never to the answer's sentinel, because code that reads
// errors.Is(err, ErrAlreadyExists) as "someone else holds it" would misread it. The answer
// is in Err, for errors.As on the field.
type OutcomeUnknownError struct {
	// Op is the operation ("insert", "update", "delete", "transaction").
	Op string
	// Resource is the table.
	Resource string
	// PartitionKey and RowKey identify the entity (the first action's, for a transaction).
	PartitionKey, RowKey string
	// Cause is the earlier failure that may have been applied (a timeout, a reset, a 500).
	Cause error
	// Err is the service's answer to the retry.
	Err error
}

// Error implements error. It holds no URL query or credentials.
func (e *OutcomeUnknownError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tablepatterns: %s %s", e.Op, e.Resource)
	if e.PartitionKey != "" || e.RowKey != "" {
		fmt.Fprintf(&b, " (PartitionKey=%q, RowKey=%q)", e.PartitionKey, e.RowKey)
	}
	b.WriteString(": outcome unknown: an earlier attempt may have been applied")
	if e.Cause != nil {
		fmt.Fprintf(&b, " (%s)", Redact(e.Cause))
	}
	if e.Err != nil {
		fmt.Fprintf(&b, "; the retry met: %s", Redact(e.Err))
	}
	return b.String()
}

// Unwrap returns ErrOutcomeUnknown, and the context's error when the context ended.
func (e *OutcomeUnknownError) Unwrap() []error {
	for _, c := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(e.Err, c) {
			return []error{ErrOutcomeUnknown, c}
		}
	}
	return []error{ErrOutcomeUnknown}
}
