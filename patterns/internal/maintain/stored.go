package maintain

import (
	"context"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Decode reads the stored entity e (a row an archive move hands over, or an index copy
// read back) as a T, decrypting what T encrypts with ctx for the key resolver. e is
// stored data: nil, and a row that does not decode as T (a forged or corrupt body,
// ciphertext that does not authenticate), are refused with an *errs.InvalidInputError
// naming e's keys.
func Decode[T any](ctx context.Context, c *codec.Codec[T], e *codec.Entity) (T, error) {
	var v T
	if e == nil {
		return v, errs.Invalid("entity", "is nil")
	}
	body, err := codec.EncodeEntity(e)
	if err == nil {
		err = c.DecodeContext(ctx, body, &v)
	}
	if err != nil {
		return v, errs.Invalid("entity", "%s/%s does not read as the indexed type: %v", e.PartitionKey, e.RowKey, err)
	}
	return v, nil
}
