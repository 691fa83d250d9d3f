package wideentity

import (
	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

// checkRev refuses the delete of an entity written since the revision opts.ETag names:
// every chunk found must carry it. No chunk found is an entity already gone, which a
// delete accepts.
func (s *Store) checkRev(pk, rk string, found []codec.Entity, opts *repo.DeleteOptions) error {
	if opts == nil || opts.ETag == "" {
		return nil
	}
	for _, c := range found {
		if _, _, ok := parseChunkKey(rk, c.RowKey); !ok {
			continue
		}
		if rev, _ := c.Properties[RevProperty].(string); rev != opts.ETag {
			return errs.Precondition("wide delete", s.table.Name(), pk, rk, "the entity was written since the revision given (opts.ETag): read it again")
		}
	}
	return nil
}
