package wideentity

import (
	"errors"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// The properties every chunk carries besides the entity's own. A logical entity may not use
// these names.
const (
	// RevProperty holds the revision of the write that stored the chunk: a random id that
	// every chunk of one write shares. Chunks of different revisions read together are a
	// torn read.
	RevProperty = "_Rev"
	// ChunksProperty holds the number of chunks of the write.
	ChunksProperty = "_Chunks"
)

const (
	// MaxChunks is the most chunks a logical entity may have: all are written in one entity
	// group transaction of at most 100 actions.
	MaxChunks = repo.MaxTransactionActions
	// PropertiesPerChunk is how many of the entity's properties one chunk holds at most: the
	// service's 252, less RevProperty, ChunksProperty and the table's write-tracking
	// property (repo.Table.WriteIDProperty).
	PropertiesPerChunk = codec.MaxProperties - 3
	// DefaultChunks is the number of chunks when Options.Chunks is 0: the guide's two
	// entities for 365 daily counts.
	DefaultChunks = 2
)

// ErrTorn is wrapped by the error of a read that kept finding chunks of different writes
// (a write in progress between the reads of two chunks, or chunks damaged by something that
// bypassed this package) after every retry of Options.TornRetry.
var ErrTorn = errors.New("wideentity: torn read: chunks of different writes")

// defaultTornRetry is the backoff between reads that found chunks of different writes:
// the concurrent write has completed by the next read, so retries are quick.
func defaultTornRetry() retry.Policy {
	return retry.Policy{Delay: 10 * time.Millisecond, MinDelay: 2 * time.Millisecond, MaxDelay: 500 * time.Millisecond, MaxRetries: 8}
}

// Options configures a Store. The zero value (or nil) gives the documented defaults.
type Options struct {
	// Chunks is the number of physical entities a logical entity is stored in, 1 to
	// MaxChunks. Defaults to DefaultChunks (2). Each chunk holds at most PropertiesPerChunk
	// properties and 1 MiB; all of them together less than 4 MiB (one transaction).
	Chunks int
	// ChunkOf says which chunk, in [0, chunks), holds the property name. It must depend on
	// the name and chunks only, so that SetProperty can merge one property into its chunk
	// without reading. Defaults to keys.Bucket(name, chunks): an MD5 of the name, which
	// spreads names evenly.
	ChunkOf func(name string, chunks int) int
	// TornRetry is the backoff between reads that found chunks of different writes. Zero
	// fields default field by field to 10 ms delay, 2 ms minimum, 500 ms maximum and 8
	// retries (the concurrent write has completed by the next read); its Logger defaults
	// to the table's.
	TornRetry retry.Policy
	// Conflict is the backoff between attempts of Update and Put that lost a race to
	// another writer. Zero fields take retry.Conflict()'s values, field by field; its
	// Logger defaults to the table's.
	Conflict retry.Policy
}

// Entity is a logical entity: keys and any number of properties, with the values codec
// supports for dynamic entities (string, bool, int32, int64, float64, time.Time, []byte,
// codec.GUID). An Entity returned by Get, Update, or stored by Insert or Put remembers the
// chunks it was read from or written as, and Put of it is conditional on them; an Entity
// built by the caller is not.
type Entity struct {
	PartitionKey, RowKey string
	Properties           map[string]any
	// Rev is the revision of the write that stored the entity, "" for one never stored.
	Rev string

	// chunks holds the physical chunks the entity was read from or written as (nil for an
	// Entity built by the caller): Put is conditional on their ETags.
	chunks []chunkRef
}

// chunkRef is one stored chunk: its RowKey and ETag.
type chunkRef struct {
	rk, etag string
}

// Store reads and writes wide entities in one table (the Azure Table storage design guide, "wide entities pattern").
// A Store is safe for concurrent use.
type Store struct {
	table *repo.Table[codec.Entity]
	// track is the table's write-tracking property (repo.Table.WriteIDProperty).
	track    string
	chunks   int
	chunkOf  func(string, int) int
	torn     retry.Policy
	conflict retry.Policy
}

// New returns the Store of wide entities in table, a table of dynamic entities built with
// repo.Options.TrackWrites: every chunk then keeps the ids of its recent writes (about 200
// bytes), so that a transaction whose response was lost is recognised exactly and fn is
// never applied twice. The table's retry policy and logger are the Store's. New sends
// nothing (create the table with Table().CreateIfNotExists).
//
// Errors: errs.ErrInvalidInput (an *errs.InvalidInputError) for a nil table, a table
// without TrackWrites, or invalid options.
func New(table *repo.Table[codec.Entity], opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if table == nil {
		return nil, errs.Invalid("table", "is nil")
	}
	// A write is one transaction of chunk replacements conditional on their ETags. Its
	// response may be lost; write tracking stores the ids of the recent writes with each
	// chunk, so that the retry knows whether the transaction committed, even after another
	// writer built on it.
	if !table.TracksWrites() {
		return nil, errs.Invalid("repo.Options.TrackWrites", "must be on for the table of wide entities: without it a write whose response was lost cannot be recognised")
	}
	// The write history is appended to every chunk: it must not be one of the chunk's own
	// properties, or every chunk write would carry that name twice.
	if tp := table.WriteIDProperty(); tp == RevProperty || tp == ChunksProperty {
		return nil, errs.Invalid("repo.Options.WriteIDProperty", "%q is a property of every chunk (wideentity reserves %s and %s): choose another name", tp, RevProperty, ChunksProperty)
	}
	if o.Chunks == 0 {
		o.Chunks = DefaultChunks
	}
	if o.Chunks < 1 || o.Chunks > MaxChunks {
		return nil, errs.Invalid("Options.Chunks", "must be between 1 and %d, got %d", MaxChunks, o.Chunks)
	}
	if o.ChunkOf == nil {
		o.ChunkOf = keys.Bucket
	}
	// Field by field: TornRetry{MaxRetries: 3} keeps the quick delays.
	o.TornRetry = o.TornRetry.Or(defaultTornRetry())
	o.Conflict = o.Conflict.Or(retry.Conflict())
	for _, p := range []*retry.Policy{&o.TornRetry, &o.Conflict} {
		if p.Logger == nil {
			p.Logger = table.Logger()
		}
		if err := p.Validate(); err != nil {
			return nil, err
		}
	}
	return &Store{table: table, track: table.WriteIDProperty(), chunks: o.Chunks, chunkOf: o.ChunkOf, torn: o.TornRetry, conflict: o.Conflict}, nil
}

// Table returns the underlying table of physical chunks.
func (s *Store) Table() *repo.Table[codec.Entity] { return s.table }
