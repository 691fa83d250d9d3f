package keyspread

import (
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// DefaultConcurrency is the default number of bucket queries that send a request at once.
const DefaultConcurrency = 8

// ReadOptions configures ReadPartition and ReadRange. nil means the zero value.
type ReadOptions struct {
	// RowFrom and RowTo bound the RowKeys read: RowFrom <= RowKey < RowTo; "" leaves an
	// end open.
	RowFrom, RowTo string
	// Where is an extra condition on the properties, applied by the service in every
	// bucket (a partition scan there, not a range).
	Where filter.Expr
	// Top is the most entities returned in all (0: no limit): each bucket is asked for at
	// most Top, and the merge stops after Top.
	Top int
	// Concurrency bounds the bucket queries sending a request at once. Defaults to
	// DefaultConcurrency (8).
	Concurrency int
}

func (o *ReadOptions) orZero() ReadOptions {
	if o == nil {
		return ReadOptions{}
	}
	return *o
}
