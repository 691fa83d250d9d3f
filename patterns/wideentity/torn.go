package wideentity

import (
	"fmt"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// assemble puts the chunks of one logical entity back together, or reports a torn read:
// chunks of two layouts or revisions, a chunk without its revision or count, a property in
// two chunks, a chunk missing. Rows of the range that are not chunks of rk are skipped.
func (s *Store) assemble(pk, rk string, chunks []codec.Entity) (*Entity, error) {
	if len(chunks) == 0 {
		return nil, fmt.Errorf("wideentity: %s (PartitionKey=%q, RowKey=%q): %w", s.table.Name(), pk, rk, repo.ErrNotFound)
	}
	torn := func(format string, args ...any) error {
		return fmt.Errorf("wideentity: %s (PartitionKey=%q, RowKey=%q): %s: %w", s.table.Name(), pk, rk, fmt.Sprintf(format, args...), ErrTorn)
	}
	e := &Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]any{}}
	layout := 0
	seen := make([]bool, MaxChunks)
	for _, c := range chunks {
		n, i, ok := parseChunkKey(rk, c.RowKey)
		if !ok {
			continue // not a chunk of this entity: another entity of the partition
		}
		rev, _ := c.Properties[RevProperty].(string)
		cn, _ := c.Properties[ChunksProperty].(int32)
		switch {
		case layout == 0:
			layout, e.Rev = n, rev
		case n != layout:
			return nil, torn("chunks of a %d-chunk and a %d-chunk layout", layout, n)
		case rev != e.Rev:
			return nil, torn("chunk %d has revision %q, an earlier one %q", i, rev, e.Rev)
		}
		if int(cn) != n || rev == "" {
			return nil, torn("chunk %d lacks its revision or count", i)
		}
		seen[i] = true
		e.chunks = append(e.chunks, chunkRef{rk: c.RowKey, etag: c.ETag})
		for name, v := range c.Properties {
			if s.reserved(name) {
				continue // wideentity's own, or a write history (never the entity's)
			}
			if _, dup := e.Properties[name]; dup {
				return nil, torn("property %q is in two chunks", name)
			}
			e.Properties[name] = v
		}
	}
	if layout == 0 {
		return nil, fmt.Errorf("wideentity: %s (PartitionKey=%q, RowKey=%q): %w", s.table.Name(), pk, rk, repo.ErrNotFound)
	}
	for i := range layout {
		if !seen[i] {
			return nil, torn("chunk %d of %d is missing", i, layout)
		}
	}
	return e, nil
}
