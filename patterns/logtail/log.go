package logtail

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

// MaxWriterIDLen is the longest Options.WriterID accepted.
const MaxWriterIDLen = 64

// Options configures a Log. The zero value (or nil) gives the documented defaults.
type Options struct {
	// Prefix is put before the inverted ticks in every entry's RowKey, so that the log can
	// share its partitions with other entities (an employee row next to the employee's
	// expense claims, for example). The log only ever reads the keys that start with Prefix
	// followed by a digit. Defaults to "" (the log's keys start with the digits).
	Prefix string
	// WriterID makes the keys of Append unique across writers that append to the same
	// partition in the same tick: it ends every key Append builds. It must be unique among
	// the Logs appending at the same time (one per process or goroutine pool), contain only
	// characters allowed in keys and be at most MaxWriterIDLen bytes. Defaults to 12 random
	// hex digits per Log.
	WriterID string
	// Clock is the time source of Append. Defaults to time.Now.
	Clock func() time.Time
}

// Log is the log tail of one table (the Azure Table storage design guide, "log tail pattern"): entities of T stored
// with RowKeys that sort newest first, so that the newest n entries of a partition are the
// first n of a range query. A Log is safe for concurrent use.
type Log[T any] struct {
	table     *repo.Table[T]
	setRowKey func(*T, string)
	prefix    string
	writer    string
	clock     func() time.Time

	mu   sync.Mutex
	last int64 // the last tick Append used: Append's ticks strictly increase
}

// New returns the log tail over table. The entries are values of T whose PartitionKey
// field the caller sets (the employee, device or stream the entry belongs to) and whose
// RowKey field the log sets. It sends nothing.
//
// Errors: errs.ErrInvalidInput (an *errs.InvalidInputError) for a nil table, an invalid Prefix
// or WriterID, or a T whose RowKey field cannot be set (reached through an embedded
// pointer).
func New[T any](table *repo.Table[T], opts *Options) (*Log[T], error) {
	if table == nil {
		return nil, errs.Invalid("table", "is nil")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := keys.Validate(o.Prefix); err != nil {
		return nil, errs.Invalid("Options.Prefix", "%v", err)
	}
	if o.WriterID == "" {
		var b [6]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		o.WriterID = hex.EncodeToString(b[:])
	}
	if len(o.WriterID) > MaxWriterIDLen {
		return nil, errs.TooLarge("Options.WriterID", "too long", len(o.WriterID), MaxWriterIDLen)
	}
	if err := keys.Validate(o.WriterID); err != nil {
		return nil, errs.Invalid("Options.WriterID", "%v", err)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	set, err := rowKeySetter(table.Codec())
	if err != nil {
		return nil, err
	}
	return &Log[T]{table: table, setRowKey: set, prefix: o.Prefix, writer: o.WriterID, clock: o.Clock}, nil
}

// Table returns the table the log reads and writes.
func (l *Log[T]) Table() *repo.Table[T] { return l.table }

// WriterID returns the id that ends the keys of this Log's Appends.
func (l *Log[T]) WriterID() string { return l.writer }
