package migrate

import (
	"bytes"
	"context"
	"errors"
	"reflect"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

// deleteOldBehind deletes the old entity (pk, rk) behind its detached copy c, If-Match the
// version c records. The copy is a row whoever can write the target table could have
// written, the real ETag of the old entity copied into it with other values; deleting
// the old entity on the strength of such a row would leave the forged values as the
// entity's only data. So when the old entity still holds the version c records, c must
// hold the Transform of that version, as the migration would write it (the properties
// of the new type, encoded, each stored with the type it writes): otherwise it is refused (ErrInvalidInput) and the old
// entity stays. An old entity at another version meets the delete's If-Match, and is
// deleted only when it is a request applied late (deleteIfLate, late_old_write.go).
// Cost: one read of the old entity.
func (m *Migration[O, N]) deleteOldBehind(ctx context.Context, c version, pk, rk string) error {
	s, err := m.readSource(ctx, pk, rk)
	if err != nil || !s.found {
		return err // gone: clean-up (here or elsewhere) deleted it already
	}
	if s.etag == c.srcETag {
		same, err := m.holdsTransformOf(c, s, pk, rk)
		if err != nil {
			return err
		}
		if !same {
			return errs.Invalid("copy", "the detached copy of (%s, %s) does not hold the old version it records: refused, the old entity stays (remove the row and clean-up copies the entity again)", pk, rk)
		}
	}
	err = m.deleteOld(ctx, pk, rk, c.srcETag)
	if errors.Is(err, repo.ErrPreconditionFailed) {
		return m.deleteIfLate(ctx, c, pk, rk, err)
	}
	return err
}

// holdTransforms is deleteOldBehind's check for a chunk of clean-up: before the old
// entities of items are deleted on the strength of their detached copies, the copies
// and the old entities are read whole (a partition's with one range query each), and
// every copy whose old entity still holds the version it records must hold the
// Transform of that version; otherwise the chunk is refused (ErrInvalidInput) before
// any delete. An old entity gone or at another version is left to the delete's
// If-Match. Cost: two range queries per partition of the chunk.
func (m *Migration[O, N]) holdTransforms(ctx context.Context, items []*item) error {
	if len(items) == 0 {
		return nil
	}
	nks, oks := make([][2]string, len(items)), make([][2]string, len(items))
	for i, it := range items {
		npk, nrk, err := m.newKeys(it.pk, it.rk)
		if err != nil {
			return err
		}
		nks[i], oks[i] = [2]string{npk, nrk}, [2]string{it.pk, it.rk}
	}
	copies, err := m.readMany(ctx, m.tgt, nks, nil)
	if err != nil {
		return err
	}
	olds, err := m.readMany(ctx, m.src, oks, nil)
	if err != nil {
		return err
	}
	for i, it := range items {
		c, s := copies[i], olds[i]
		if !c.found || !s.found || s.etag != it.c.srcETag {
			continue
		}
		same, err := m.holdsTransformOf(c, s, it.pk, it.rk)
		if err != nil {
			return err
		}
		if !same {
			return errs.Invalid("copy", "the detached copy of (%s, %s) does not hold the old version it records: refused, the old entity stays (remove the row and clean-up copies the entity again)", it.pk, it.rk)
		}
	}
	return nil
}

// holdsTransformOf reports whether the copy c holds what the migration writes for the
// old entity s: both are read as the new type and encoded again, so that the keys and
// the new type's properties count and the copy's own properties do not; and each
// property the migration writes must be stored with the type it writes (sameTypes): the
// new type reads an Int32 or a string into an int64 field, but a query on the typed
// value misses such a copy.
func (m *Migration[O, N]) holdsTransformOf(c, s version, pk, rk string) (bool, error) {
	want, err := m.copyOf(s, pk, rk)
	if err != nil {
		return false, err
	}
	w, err := m.canonical(want)
	if err != nil {
		return false, err
	}
	g, err := m.canonical(c.e)
	if err != nil || !bytes.Equal(g, w) {
		return false, nil // a copy the new type cannot read is not the migration's
	}
	we, err := codec.DecodeEntity(w)
	if err != nil {
		return false, err
	}
	return sameTypes(we.Properties, c.e.Properties), nil
}

// sameTypes reports whether every property of want is stored in have with its type. A
// whole double may be stored as an Int32 (the emulator does; the service answers one
// unannotated), so an Int32 of the same value stands for it.
func sameTypes(want, have map[string]any) bool {
	for name, w := range want {
		h, ok := have[name]
		if !ok {
			return false
		}
		if wf, isDouble := w.(float64); isDouble {
			if hi, isInt := h.(int32); isInt && float64(hi) == wf {
				continue
			}
		}
		if reflect.TypeOf(h) != reflect.TypeOf(w) {
			return false
		}
	}
	return true
}

// canonical is e read as the new type and encoded again.
func (m *Migration[O, N]) canonical(e *codec.Entity) ([]byte, error) {
	n, err := m.decodeNew(e, "")
	if err != nil {
		return nil, err
	}
	return m.spec.Target.Codec().Encode(&n)
}
