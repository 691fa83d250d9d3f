package maintain

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Decode reads the stored entity e (a row an archive move hands over, or an index copy
// read back) as a T, decrypting what T encrypts with ctx for the key resolver. e is
// stored data: nil, and a row that cannot be read as T (a forged or corrupt body,
// ciphertext that does not authenticate, a key id this reader does not hold), are
// refused with an *errs.InvalidInputError naming e's keys. A failure of the reading
// itself (the key holder out of reach, ctx done) is no fault of the data: it is returned
// as it is (wrapped), never as errs.ErrInvalidInput, so that a caller retries instead of
// judging the row.
func Decode[T any](ctx context.Context, c *codec.Codec[T], e *codec.Entity) (T, error) {
	var v T
	if e == nil {
		return v, errs.Invalid("entity", "is nil")
	}
	body, err := codec.EncodeEntity(e)
	if err != nil {
		return v, errs.Invalid("entity", "%s/%s cannot be encoded: %v", e.PartitionKey, e.RowKey, err)
	}
	err = c.DecodeContext(ctx, body, &v)
	switch {
	case err == nil:
		return v, nil
	case unreadable(err):
		return v, errs.Invalid("entity", "%s/%s does not read as the indexed type: %v", e.PartitionKey, e.RowKey, err)
	}
	return v, fmt.Errorf("tablepatterns: reading %s/%s: %w", e.PartitionKey, e.RowKey, err)
}

// unreadable reports whether a decode error is the stored data's: malformed for T,
// tampered, or under a key this reader does not hold.
func unreadable(err error) bool {
	var de *codec.DecodeError
	return errors.As(err, &de) || errors.Is(err, codec.ErrTampered) || errors.Is(err, codec.ErrWrongKey) ||
		errors.Is(err, codec.ErrUnknownKey) || errors.Is(err, codec.ErrMissingKeyID)
}
