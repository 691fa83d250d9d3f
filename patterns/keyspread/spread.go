package keyspread

import (
	"context"
	"iter"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// MaxBuckets is the largest number of buckets: a read of one natural partition sends one
// query per bucket.
const MaxBuckets = 1000

// Buckets spreads partition keys over a fixed number of buckets with a stable hash
// (keys.Bucket: MD5, the same in every process and version). A bucketed key is the bucket
// number, zero-padded, an underscore and the natural key: "07_2014-07-31T18".
//
// Two ways to use it:
//
//   - Key(natural): the bucket comes from the natural key itself. For keys that are each
//     their own partition but arrive in order (order numbers, timestamps: the append-only
//     pattern), the insert point is spread over N key ranges instead of one, and a range
//     of natural keys is still N range queries (ReadRange).
//   - KeyBy(natural, by): the bucket comes from another value, typically the RowKey or an
//     entity id. One hot natural partition ("every sign-in of this hour") becomes N
//     partitions, read back with N queries (ReadPartition).
//
// A Buckets is a small value, safe for concurrent use. Changing N moves keys: choose it
// once per table (or migrate).
type Buckets struct{ n int }

// NewBuckets returns a Buckets of n buckets, 1 to MaxBuckets.
//
// Errors: errs.ErrInvalidInput for n out of range.
func NewBuckets(n int) (Buckets, error) {
	if n < 1 || n > MaxBuckets {
		return Buckets{}, errs.Invalid("buckets", "must be 1 to %d, got %d", MaxBuckets, n)
	}
	return Buckets{n: n}, nil
}

// N returns the number of buckets.
func (b Buckets) N() int { return max(b.n, 1) }

// Key returns natural prefixed with its own bucket (keys.BucketKey).
func (b Buckets) Key(natural string) string { return keys.BucketKey(natural, b.N()) }

// KeyBy returns natural prefixed with the bucket of by.
func (b Buckets) KeyBy(natural, by string) string {
	return keys.BucketPrefix(keys.Bucket(by, b.N()), b.N()) + natural
}

// Prefix returns the prefix of bucket i's keys, e.g. "07_".
func (b Buckets) Prefix(i int) string { return keys.BucketPrefix(i, b.N()) }

// Split returns the bucket and the natural key of a bucketed key.
//
// Errors: errs.ErrInvalidInput when pk is not a key of b (wrong prefix width or bucket out of
// range).
func (b Buckets) Split(pk string) (bucket int, natural string, err error) {
	bucket, natural, err = keys.SplitBucketKey(pk)
	if err != nil {
		return 0, "", err
	}
	if bucket >= b.N() || !strings.HasPrefix(pk, b.Prefix(bucket)) {
		return 0, "", errs.Invalid("PartitionKey", "%q is not a key of %d buckets", pk, b.N())
	}
	return bucket, natural, nil
}

// HashPrefix spreads sequential keys with the first hex digits of their MD5, as Tablestore's primary key design guide
// does for order numbers: "ee8f_200001". Keys land anywhere in the key space, so inserts
// spread over every partition server; the cost is that a range of natural keys can no
// longer be read with range queries (there are 16^digits prefixes): use it for keys read
// by point queries, and Buckets for keys read by range.
type HashPrefix struct{ digits int }

// NewHashPrefix returns a HashPrefix of digits hex digits, 1 to 32 (0 means
// keys.DefaultHashDigits, 4).
//
// Errors: errs.ErrInvalidInput for digits out of range.
func NewHashPrefix(digits int) (HashPrefix, error) {
	if digits == 0 {
		digits = keys.DefaultHashDigits
	}
	if digits < 1 || digits > 32 {
		return HashPrefix{}, errs.Invalid("digits", "must be 1 to 32, got %d", digits)
	}
	return HashPrefix{digits: digits}, nil
}

// Key returns natural with its hash prefix.
func (h HashPrefix) Key(natural string) string {
	return keys.HashPrefix(natural, h.digits)
}

// Split returns the natural key of a prefixed key, checking the prefix.
//
// Errors: errs.ErrInvalidInput when the prefix is missing, of another width, or not natural's
// hash.
func (h HashPrefix) Split(pk string) (string, error) {
	natural, err := keys.StripHashPrefix(pk)
	if err != nil {
		return "", err
	}
	if h.digits > 0 && len(pk)-len(natural)-1 != h.digits {
		return "", errs.Invalid("PartitionKey", "%q has a prefix of %d digits, want %d", pk, len(pk)-len(natural)-1, h.digits)
	}
	return natural, nil
}

// ReadPartition reads the natural partition spread by b.KeyBy(natural, ...): one query
// per bucket (PartitionKey eq "07_natural", with the RowKey range if given), run in
// parallel, merged into one stream in RowKey order as if the partition were one. Results
// stream: each bucket holds at most two pages in memory.
//
// Iteration stops at the first error, yielded with the zero T; breaking out of the loop
// cancels the queries.
//
// Cost: one query per bucket (more for buckets over 1,000 entities).
//
// Errors: errs.ErrInvalidInput (natural, options; nothing sent), as repo.Pager.Next otherwise.
func ReadPartition[T any](ctx context.Context, t *repo.Table[T], b Buckets, natural string, opts *ReadOptions) iter.Seq2[T, error] {
	o := opts.orZero()
	qs := make([]repo.Query, b.N())
	for i := range qs {
		pk := b.Prefix(i) + natural
		var f filter.Expr
		if o.RowFrom == "" && o.RowTo == "" {
			f = filter.PartitionKey(pk)
		} else {
			f = filter.RowKeyRange(pk, o.RowFrom, o.RowTo)
		}
		qs[i] = repo.Query{Filter: filter.And(f, o.Where), Top: o.Top}
	}
	return merge(ctx, t, qs, o, func(v *T) (string, string) {
		_, rk := t.Codec().Keys(v)
		return "", rk
	})
}

// ReadRange reads the entities whose natural partition key is in [lo, hi) ("" leaves an
// end open), for keys spread by b.Key(natural): one partition-range query per bucket
// ("07_lo" <= PartitionKey < "07_hi"), run in parallel, merged in (natural PartitionKey,
// RowKey) order. RowFrom and RowTo are not supported here (they would apply to every
// partition of the range): use Where.
//
// Cost: one query per bucket, plus one per 1,000 entities and per partition boundary
// where the service ends a page.
//
// Errors: errs.ErrInvalidInput (bounds, options; nothing sent), as repo.Pager.Next otherwise.
func ReadRange[T any](ctx context.Context, t *repo.Table[T], b Buckets, lo, hi string, opts *ReadOptions) iter.Seq2[T, error] {
	o := opts.orZero()
	if o.RowFrom != "" || o.RowTo != "" {
		return fail[T](errs.Invalid("ReadOptions.RowFrom", "ReadRange reads many partitions: filter RowKeys with Where"))
	}
	qs := make([]repo.Query, b.N())
	for i := range qs {
		p := b.Prefix(i)
		plo, phi := p+lo, p+hi
		if hi == "" {
			_, phi = keys.PrefixRange(p)
		}
		qs[i] = repo.Query{Filter: filter.And(filter.PartitionRange(plo, phi), o.Where), Top: o.Top}
	}
	return merge(ctx, t, qs, o, func(v *T) (string, string) {
		pk, rk := t.Codec().Keys(v)
		if _, natural, err := keys.SplitBucketKey(pk); err == nil {
			pk = natural
		}
		return pk, rk
	})
}
