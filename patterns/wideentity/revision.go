package wideentity

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

// ETag is the version of the entity as it was read or written: a digest of the ETags of
// its chunks, so that any write to any chunk since (an Update, a Put, a SetProperty, which
// leaves Rev unchanged) gives another. "" for an Entity built by the caller. Delete is
// conditional on it when opts.ETag holds it.
func (e *Entity) ETag() string {
	if e == nil || len(e.chunks) == 0 {
		return ""
	}
	return chunksVersion(e.chunks)
}

// chunksVersion digests the keys and ETags of chunks, in key order.
func chunksVersion(chunks []chunkRef) string {
	sorted := slices.Clone(chunks)
	slices.SortFunc(sorted, func(a, b chunkRef) int { return strings.Compare(a.rk, b.rk) })
	h := sha256.New()
	for _, c := range sorted {
		h.Write([]byte(c.rk))
		h.Write([]byte{0})
		h.Write([]byte(c.etag))
		h.Write([]byte{0})
	}
	return `W/"wide-` + hex.EncodeToString(h.Sum(nil)[:16]) + `"`
}

// checkVersion refuses the delete of an entity written since the version opts.ETag names
// (Entity.ETag): the chunks found now must be exactly the chunks read then, with the same
// ETags. No chunk found is an entity already gone, which a delete accepts.
func (s *Store) checkVersion(pk, rk string, found []codec.Entity, opts *repo.DeleteOptions) error {
	if opts == nil || opts.ETag == "" {
		return nil
	}
	var now []chunkRef
	for _, c := range found {
		if _, _, ok := parseChunkKey(rk, c.RowKey); ok {
			now = append(now, chunkRef{rk: c.RowKey, etag: c.ETag})
		}
	}
	if len(now) == 0 || chunksVersion(now) == opts.ETag {
		return nil
	}
	return errs.Precondition("wide delete", s.table.Name(), pk, rk, "the entity was written since the version given (opts.ETag): read it again")
}
