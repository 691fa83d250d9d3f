package repo

import (
	"context"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/retry"
)

// GetFunc reads one entity by its keys like Get, with t's retry policy and error wrapping,
// but decodes it with decode instead of T's codec: for a table that holds entities of
// several types (decode is then built on codec.Registry.Decode). decode receives the
// entity's JSON as the service returns it and the response's ETag; like QueryFunc it sees
// the stored properties as they are (no decryption), except the write-tracking property
// of a tracked table (WriteIDProperty), which is removed: a decoder that keeps unmapped
// properties would otherwise write the history back as the entity's own.
//
// Errors: ErrNotFound, ErrInvalidInput (keys), ErrTransient, *Error, and decode's.
func GetFunc[V, T any](ctx context.Context, t *Table[T], pk, rk string, decode func(data []byte, etag string) (V, error)) (V, error) {
	var out V
	if err := checkAddressable(pk, rk); err != nil {
		return out, err
	}
	err := retry.Do(ctx, t.opts.Retry, t.op("get", pk, rk), func(ctx context.Context, _ int) error {
		resp, err := t.client.GetEntity(ctx, pk, rk, nil)
		if err != nil {
			return errs.Wrap(err, "get", t.name, pk, rk)
		}
		if t.track != nil {
			t.track.observe(resp.Value, string(resp.ETag))
		}
		data, err := t.hideHistory(resp.Value)
		if err != nil {
			return err
		}
		out, err = decode(data, string(resp.ETag))
		return err
	})
	return out, err
}
