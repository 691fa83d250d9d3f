package largeentity

import (
	"context"
	"fmt"
	"strings"
)

// vet treats the references of v, read back from storage, as untrusted input: every
// out-of-line part must name a blob this Store generates for v's keys and that part's
// property, with a size a part may have. A reference that does not is refused as tampered
// before any blob request. vet marks the parts it accepts as checked for Open.
func (s *Store[T]) vet(v *T) error {
	pk, rk := s.table.Codec().Keys(v)
	for i, p := range s.partsOf(v, false) {
		if p == nil || !p.present || p.pending || p.name == "" {
			continue
		}
		prop := s.parts[i].property
		prefix := s.partPrefix(pk, rk, prop)
		if !generated(p.name, prefix) {
			return fmt.Errorf("largeentity: %s (PartitionKey=%q, RowKey=%q): property %s names a blob this Store does not generate for this entity: %w",
				s.table.Name(), pk, rk, prop, ErrTampered)
		}
		if p.size > maxStoredSize {
			return fmt.Errorf("largeentity: %s (PartitionKey=%q, RowKey=%q): property %s records a size of %d bytes, more than any blob holds: %w",
				s.table.Name(), pk, rk, prop, p.size, ErrTampered)
		}
		p.owner = prefix
	}
	return nil
}

// ownPrefix reports whether prefix is a partPrefix of this Store: its prefix, an entity
// directory and one of its parts' properties (a Blob vouched for by another Store, even
// one whose prefix starts with this one's, is not).
func (s *Store[T]) ownPrefix(prefix string) bool {
	rest, ok := strings.CutPrefix(prefix, s.opts.Prefix+"/")
	if !ok || len(rest) < 34 || rest[32] != '/' {
		return false
	}
	for _, c := range []byte(rest[:32]) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	for _, p := range s.parts {
		if rest[33:] == p.property+"." {
			return true
		}
	}
	return false
}

// get reads the entity with these keys and vets its references.
func (s *Store[T]) get(ctx context.Context, pk, rk string) (T, error) {
	v, err := s.table.Get(ctx, pk, rk)
	if err != nil {
		return v, err
	}
	if err := s.vet(&v); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// maxStoredSize bounds the size a reference may record: the largest block blob (190.7 TiB).
// It only rejects the absurd; memory is protected by checking Content-Length against the
// recorded size before anything is allocated.
const maxStoredSize = 50000 * 4000 << 20
