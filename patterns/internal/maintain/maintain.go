// Package maintain holds what the index packages secondaryindex and indexentity share:
// for their maintenance (backfill, verify, repair) the partition listing, the option
// defaults, the loop of per-entity writes (Each) and the job plumbing, and for maintenance and archive moves alike the
// reading of a stored entity as the indexed type (Decode).
package maintain

import (
	"context"
	"fmt"
	"iter"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// DefaultSamples is how many drifts a report keeps as samples by default.
const DefaultSamples = 20

// Samples resolves VerifyOptions.Samples: 0 means DefaultSamples, -1 none, any other
// negative value is refused with an *errs.InvalidInputError.
func Samples(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultSamples, nil
	case n == -1:
		return 0, nil
	case n < 0:
		return 0, errs.Invalid("VerifyOptions.Samples", "must be positive, 0 (default %d) or -1 (none), got %d", DefaultSamples, n)
	}
	return n, nil
}

// Partitions lists the distinct PartitionKeys of t with one request per partition (a
// query for the first entity after the last partition found), skipping those skip refuses
// (nil skips none). A listing that does not advance (keys read back from storage are
// untrusted) ends with an error.
func Partitions[T any](ctx context.Context, t *repo.Table[T], skip func(pk string) bool) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		last := ""
		for {
			q := repo.Query{Top: 1, Select: []string{"PartitionKey"}}
			if last != "" {
				q.Filter = filter.Gt("PartitionKey", last)
			}
			got, err := t.Collect(ctx, q)
			if err != nil {
				yield("", err)
				return
			}
			if len(got) == 0 {
				return
			}
			pk, _ := t.Codec().Keys(&got[0])
			// The service orders keys by UTF-16 code units, not Go's bytes.
			if pk == "" || keys.Compare(pk, last) <= 0 {
				yield("", fmt.Errorf("tablepatterns: partition listing of %s did not advance after %q", t.Name(), last))
				return
			}
			last = pk
			if skip != nil && skip(pk) {
				continue
			}
			if !yield(pk, nil) {
				return
			}
		}
	}
}
