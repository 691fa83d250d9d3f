package denormalize

import (
	"context"
	"slices"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// headerKey and linkKey are the RowKeys of a source's link header and of one link.
func (r *Relation[S, D]) headerKey(src Key) string { return keys.Join(tagLink, r.name, src.RowKey) }

func (r *Relation[S, D]) linkKey(src, target Key) (string, error) {
	rk := keys.Join(tagLink, r.name, src.RowKey, target.PartitionKey, target.RowKey)
	if err := codec.ValidateKey("RowKey", rk); err != nil {
		return "", errs.Invalid("link", "the link row's RowKey (escaped \"link!%s!<source RowKey>!<target PartitionKey>!<target RowKey>\") breaks the key rules: %v", r.name, err)
	}
	return rk, nil
}

// readLinks reads a source's link header (nil if absent) and its links with one range
// query of the source's partition.
func (r *Relation[S, D]) readLinks(ctx context.Context, src Key) (*linkRow, []linkRow, error) {
	header := r.headerKey(src)
	_, hi, _ := keys.Escaped().Range(tagLink, r.name, src.RowKey)
	rows, err := r.links.Collect(ctx, repo.Query{Filter: filter.RowKeyRange(src.PartitionKey, header, hi)})
	if err != nil {
		return nil, nil, err
	}
	var hdr *linkRow
	links := rows[:0]
	for i := range rows {
		switch {
		case rows[i].RowKey == header:
			h := rows[i] // copied: links reuses rows' array
			hdr = &h
		case rows[i].TargetPartitionKey != "" && validTarget(targetOf(&rows[i])):
			links = append(links, rows[i])
		}
	}
	return hdr, links, nil
}

// validTarget reports whether a link's target is a key an entity can have. Links are
// stored data that anyone with write access can forge: a link to a key no target can have
// names nothing to copy into, and must not make every write and refresh of its source fail.
func validTarget(k Key) bool {
	return codec.ValidateKey("PartitionKey", k.PartitionKey) == nil && codec.ValidateKey("RowKey", k.RowKey) == nil
}

func targetOf(l *linkRow) Key { return Key{l.TargetPartitionKey, l.TargetRowKey} }

// Copies returns where the source src is copied: the keys of its targets, in PartitionKey,
// RowKey order, read from its links with one range query of its partition. In
// AcrossPartitions mode the links follow the targets eventually (a target written moments
// ago may be missing until the worker ran).
//
// Errors: errs.ErrInvalidInput (nothing sent), errs.ErrTransient, *repo.Error.
func (r *Relation[S, D]) Copies(ctx context.Context, src Key) ([]Key, error) {
	if err := r.checkKey("source", src, true); err != nil {
		return nil, err
	}
	_, links, err := r.readLinks(ctx, src)
	if err != nil {
		return nil, err
	}
	out := make([]Key, len(links))
	for i := range links {
		out[i] = targetOf(&links[i])
	}
	slices.SortFunc(out, compareKeys)
	return out, nil
}

// headerAction writes a source's link header with count copies: an update conditional on
// the header read, or an insert of the first one (which fails if another writer inserted
// it meanwhile).
func (r *Relation[S, D]) headerAction(src Key, hdr *linkRow, count int32) repo.Action {
	if hdr == nil {
		return r.links.InsertAction(&linkRow{PartitionKey: src.PartitionKey, RowKey: r.headerKey(src), Copies: count})
	}
	next := *hdr
	next.Copies = count
	return r.links.UpdateAction(&next, nil)
}

// unlinkActions removes the link src -> k and counts it out of src's header, conditional on
// both as read (InPartition mode).
func (r *Relation[S, D]) unlinkActions(ctx context.Context, src, k Key) ([]repo.Action, error) {
	hdr, links, err := r.readLinks(ctx, src)
	if err != nil {
		return nil, err
	}
	for i := range links {
		if targetOf(&links[i]) == k {
			return []repo.Action{
				r.links.DeleteAction(src.PartitionKey, links[i].RowKey, &repo.DeleteOptions{ETag: links[i].ETag}),
				r.headerAction(src, hdr, int32(len(links)-1)),
			}, nil
		}
	}
	return nil, nil
}
