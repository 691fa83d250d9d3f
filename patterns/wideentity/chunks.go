package wideentity

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

// chunkKey is the RowKey of chunk i of n of the logical RowKey rk: the escaped compound
// key (rk, n, i), e.g. "000123!02!01". The chunk count is part of the key so that a merge
// aimed at a layout that is not the stored one finds no entity rather than a wrong chunk.
func chunkKey(rk string, n, i int) string {
	return keys.Join(rk, pad2(n), pad2(i))
}

func pad2(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

// parseChunkKey returns n and i of a chunk RowKey of the logical rk.
func parseChunkKey(rk, key string) (n, i int, ok bool) {
	parts, err := keys.Split(key)
	if err != nil || len(parts) != 3 || parts[0] != rk {
		return 0, 0, false
	}
	n, err1 := strconv.Atoi(parts[1])
	i, err2 := strconv.Atoi(parts[2])
	return n, i, err1 == nil && err2 == nil && n >= 1 && n <= MaxChunks && i >= 0 && i < n
}

// checkKeys refuses keys no chunk can have, before any request.
func (s *Store) checkKeys(pk, rk string) error {
	if pk == "" {
		return errs.Invalid("PartitionKey", "is empty")
	}
	if err := codec.ValidateKey("PartitionKey", pk); err != nil {
		return err
	}
	if err := codec.ValidateKey("RowKey", rk); err != nil {
		return err
	}
	// The longest chunk key must fit too.
	return codec.ValidateKey("RowKey", chunkKey(rk, MaxChunks, MaxChunks-1))
}

// reserved reports a property name that is not the entity's own: wideentity's, the
// table's write-tracking property, and the default one (repo.DefaultWriteIDProperty), which
// chunks written through a table tracking under the default name still carry after the
// table is reopened with another: read ignores both.
func (s *Store) reserved(name string) bool {
	return name == RevProperty || name == ChunksProperty || name == repo.DefaultWriteIDProperty || name == s.track
}

func (s *Store) checkName(name string) error {
	if s.reserved(name) {
		return errs.Invalid(name, "is reserved by wideentity (its own properties and the table's write-tracking property)")
	}
	return codec.ValidatePropertyName(name)
}

// chunkIndex returns the chunk of name in a layout of n chunks.
func (s *Store) chunkIndex(name string, n int) (int, error) {
	i := s.chunkOf(name, n)
	if i < 0 || i >= n {
		return 0, errs.Invalid("Options.ChunkOf", "returned %d for %q, outside [0, %d)", i, name, n)
	}
	return i, nil
}

// layout splits e's properties into s.chunks chunk entities for revision rev, checking
// every limit: names, values, properties and bytes per chunk.
func (s *Store) layout(e *Entity, rev string) ([]*codec.Entity, error) {
	if e == nil {
		return nil, errs.Invalid("entity", "is nil")
	}
	if err := s.checkKeys(e.PartitionKey, e.RowKey); err != nil {
		return nil, err
	}
	n := s.chunks
	out := make([]*codec.Entity, n)
	for i := range out {
		out[i] = &codec.Entity{PartitionKey: e.PartitionKey, RowKey: chunkKey(e.RowKey, n, i), Properties: map[string]any{
			RevProperty: rev, ChunksProperty: int32(n),
		}}
	}
	for name, v := range e.Properties {
		if err := s.checkName(name); err != nil {
			return nil, err
		}
		i, err := s.chunkIndex(name, n)
		if err != nil {
			return nil, err
		}
		out[i].Properties[name] = v
	}
	for i, c := range out {
		if k := len(c.Properties) - 2; k > PropertiesPerChunk {
			return nil, errs.TooLarge(fmt.Sprintf("chunk %d", i), "too many properties for one chunk: raise Options.Chunks", k, PropertiesPerChunk)
		}
		if _, err := codec.EncodeEntity(c); err != nil {
			return nil, fmt.Errorf("wideentity: chunk %d of %d: %w", i, n, err)
		}
	}
	return out, nil
}

func newRev() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
