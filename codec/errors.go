package codec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// ErrInvalidInput is the sentinel every refusal of this package wraps: a value that breaks
// a service limit or rule, or a Go type that cannot be mapped to an entity. It is the same
// variable as the SDK-wide sentinel, so errors.Is works whichever package a caller names.
var ErrInvalidInput = errs.ErrInvalidInput

// InvalidInputError is the error type of every refusal: it names the Go type, the field or
// property, the measured size and the limit where they apply, and unwraps to ErrInvalidInput.
type InvalidInputError = errs.InvalidInputError

// ErrUnknownEntityType is wrapped by the error a Registry returns when an entity's
// discriminator names no registered type (see RegistryOptions.UnknownAsEntity).
var ErrUnknownEntityType = errors.New("tablepatterns: unknown entity type")

// DecodeError reports entity JSON that could not be decoded: malformed JSON, or a value
// that does not fit the destination field (wrong JSON kind, integer overflow, bad base64,
// bad DateTime or Guid). It unwraps to the underlying parse error, if any.
type DecodeError struct {
	// Type is the Go type being decoded into ("" for dynamic entities).
	Type string
	// Field is the Go field (or the property name for dynamic entities); "" for syntax errors.
	Field string
	// Property is the stored property name; "" for syntax errors.
	Property string
	// Offset is the byte offset in the input where the problem was found.
	Offset int
	// Reason says what was wrong, in words.
	Reason string
	// Err is the underlying error, if any.
	Err error
}

// Error implements error.
func (e *DecodeError) Error() string {
	var b strings.Builder
	b.WriteString("tablepatterns: decode entity")
	if e.Type != "" {
		b.WriteString(" into ")
		b.WriteString(e.Type)
	}
	if e.Field != "" {
		b.WriteString(": field ")
		b.WriteString(e.Field)
		if e.Property != "" && e.Property != e.Field {
			fmt.Fprintf(&b, " (property %q)", e.Property)
		}
	} else if e.Property != "" {
		fmt.Fprintf(&b, ": property %q", e.Property)
	}
	fmt.Fprintf(&b, ": %s at offset %d", e.Reason, e.Offset)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *DecodeError) Unwrap() error { return e.Err }

// UnknownEntityTypeError is returned by Registry.Decode when the discriminator of an entity
// names no registered type. It unwraps to ErrUnknownEntityType.
type UnknownEntityTypeError struct {
	// Name is the discriminator value found ("" if the entity carried none).
	Name string
	// PartitionKey and RowKey identify the entity.
	PartitionKey, RowKey string
}

// Error implements error.
func (e *UnknownEntityTypeError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("tablepatterns: entity (PartitionKey=%q, RowKey=%q) carries no entity type", e.PartitionKey, e.RowKey)
	}
	return fmt.Sprintf("tablepatterns: unknown entity type %q (PartitionKey=%q, RowKey=%q)", e.Name, e.PartitionKey, e.RowKey)
}

// Unwrap returns ErrUnknownEntityType.
func (e *UnknownEntityTypeError) Unwrap() error { return ErrUnknownEntityType }

func invalid(typ, field, reason string) *InvalidInputError {
	return &InvalidInputError{Type: typ, Field: field, Reason: reason}
}

func tooLarge(typ, field, reason string, size, limit int) *InvalidInputError {
	return &InvalidInputError{Type: typ, Field: field, Reason: reason, Size: size, Limit: limit}
}
