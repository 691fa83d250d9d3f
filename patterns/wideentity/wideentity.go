package wideentity

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
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

// Get reads a logical entity with one range query over its chunks and reassembles it. When
// the chunks come from different writes (a write committed between the reads of two
// chunks: a query that spans pages, or a service that does not read a partition as a
// snapshot), it reads again, with the backoff of Options.TornRetry.
//
// Errors: errs.ErrNotFound (no chunk), errs.ErrInvalidInput (keys; nothing sent), an error wrapping
// ErrTorn and errs.ErrTransient (still torn after every retry), errs.ErrTransient, *errs.ServiceError.
func (s *Store) Get(ctx context.Context, pk, rk string) (*Entity, error) {
	if err := s.checkKeys(pk, rk); err != nil {
		return nil, err
	}
	op := retry.Op{Name: "wide get", Resource: s.table.Name(), PartitionKey: pk, RowKey: rk,
		Retryable: func(err error) bool { return errors.Is(err, ErrTorn) }}
	return retry.DoValue(ctx, s.torn, op, func(ctx context.Context, _ int) (*Entity, error) {
		return s.read(ctx, pk, rk)
	})
}

// read reads the chunks once and assembles them, or reports a torn read.
func (s *Store) read(ctx context.Context, pk, rk string) (*Entity, error) {
	chunks, err := s.table.Collect(ctx, repo.Query{Filter: filter.RowKeyPrefix(pk, keys.Join(rk, ""))})
	if err != nil {
		return nil, err
	}
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

// Insert stores a new logical entity: every chunk inserted in one entity group
// transaction (one request), so that readers see all of it or nothing. On success e.Rev
// is set and e can be passed to Put for a conditional overwrite.
//
// Errors: errs.ErrInvalidInput (keys, names, values, a chunk over PropertiesPerChunk or 1 MiB,
// the transaction over 4 MiB; nothing sent), errs.ErrAlreadyExists (a chunk exists),
// errs.ErrTransient, *repo.ActionError, *errs.ServiceError.
func (s *Store) Insert(ctx context.Context, e *Entity) error {
	rev := newRev()
	chunks, err := s.layout(e, rev)
	if err != nil {
		return err
	}
	actions := make([]repo.Action, len(chunks))
	for i, c := range chunks {
		actions[i] = s.table.InsertAction(c)
	}
	return s.submit(ctx, e, rev, chunks, actions)
}

// submit runs the transaction and records the new revision and chunks in e.
func (s *Store) submit(ctx context.Context, e *Entity, rev string, chunks []*codec.Entity, actions []repo.Action) error {
	// Only a store that cannot delete a key inside a transaction (Azurite, for U+2028 or
	// U+2029) gets the old layout's deletes apart (see the package documentation).
	if _, err := repo.SubmitOrSplit(ctx, actions...); err != nil {
		return err
	}
	e.Rev = rev
	e.chunks = make([]chunkRef, 0, len(chunks))
	for _, c := range chunks {
		e.chunks = append(e.chunks, chunkRef{rk: c.RowKey, etag: c.ETag})
	}
	return nil
}

// write stores e over the chunks in stored (as read, or nil for none) in one transaction:
// replaces the chunks that exist, conditional on their ETags; inserts the new ones; deletes
// the chunks of another layout. errs.ErrPreconditionFailed or errs.ErrAlreadyExists mean another
// writer changed the entity since stored was read.
func (s *Store) write(ctx context.Context, e *Entity, stored []chunkRef) error {
	rev := newRev()
	chunks, err := s.layout(e, rev)
	if err != nil {
		return err
	}
	etags := make(map[string]string, len(stored))
	for _, c := range stored {
		etags[c.rk] = c.etag
	}
	actions := make([]repo.Action, 0, len(chunks)+len(stored))
	for _, c := range chunks {
		if etag, ok := etags[c.RowKey]; ok {
			c.ETag = etag
			actions = append(actions, s.table.UpdateAction(c, nil)) // replace, If-Match
			delete(etags, c.RowKey)
		} else {
			actions = append(actions, s.table.InsertAction(c))
		}
	}
	for _, c := range stored {
		if etag, ok := etags[c.rk]; ok {
			actions = append(actions, s.table.DeleteAction(e.PartitionKey, c.rk, &repo.DeleteOptions{ETag: etag}))
		}
	}
	if len(actions) > repo.MaxTransactionActions {
		return errs.TooLarge("transaction", "the new layout and the chunks of the old one to delete do not fit one transaction", len(actions), repo.MaxTransactionActions)
	}
	return s.submit(ctx, e, rev, chunks, actions)
}

// conflictOp is the retry.Op of a read-modify-write: it retries the races lost to other
// writers, not the transient failures (repo already retried those).
func (s *Store) conflictOp(name, pk, rk string) retry.Op {
	return retry.Op{Name: name, Resource: s.table.Name(), PartitionKey: pk, RowKey: rk,
		Retryable: func(err error) bool {
			var fe *fnError
			if errors.As(err, &fe) || isTableNotFound(err) {
				return false
			}
			if errors.Is(err, repo.ErrOutcomeUnknown) {
				// The transaction may have committed: running fn again could apply it twice.
				return false
			}
			return errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrAlreadyExists) || errors.Is(err, repo.ErrNotFound)
		}}
}

// isTableNotFound tells a missing table, which no retry cures, from a missing chunk.
func isTableNotFound(err error) bool {
	var se *errs.ServiceError
	var ae *repo.ActionError
	return errors.As(err, &se) && se.Code == "TableNotFound" || errors.As(err, &ae) && ae.Code == "TableNotFound"
}

// fnError carries an error of the caller's fn through retry.Do, which does not retry it.
type fnError struct{ err error }

func (e *fnError) Error() string { return e.err.Error() }
func (e *fnError) Unwrap() error { return e.err }

// Put stores e, every chunk in one entity group transaction. If e was read by Get (or
// stored by Insert, Put or Update), the write is conditional on the chunks it came from:
// errs.ErrPreconditionFailed if any changed since (optimistic concurrency over the whole
// logical entity). Otherwise Put overwrites whatever is stored: it reads the stored chunks
// first (to replace them and delete those of another layout in the same transaction) and
// retries if another writer wins the race. Two requests (one for a conditional Put).
//
// A write whose response was lost is recognised by its write id (see Options.Table: write
// tracking is always on): success if it committed, a retry from the read if it did not,
// and errs.ErrOutcomeUnknown only when the history cannot tell (then re-read before deciding).
//
// Errors: errs.ErrInvalidInput (as Insert; nothing sent), errs.ErrPreconditionFailed, errs.ErrOutcomeUnknown, ErrTorn (the
// stored chunks stayed torn), errs.ErrTransient, *repo.ActionError, *errs.ServiceError.
func (s *Store) Put(ctx context.Context, e *Entity) error {
	if e == nil {
		return errs.Invalid("entity", "is nil")
	}
	if e.chunks != nil {
		err := s.write(ctx, e, e.chunks)
		if errors.Is(err, repo.ErrAlreadyExists) || errors.Is(err, repo.ErrNotFound) {
			// A chunk we did not read appeared, or one we read is gone: the entity changed.
			err = fmt.Errorf("%w (%w)", repo.ErrPreconditionFailed, err)
		}
		return err
	}
	if _, err := s.layout(e, ""); err != nil { // refuse bad input before the read
		return err
	}
	props := e.Properties
	return s.update(ctx, e.PartitionKey, e.RowKey, func(cur *Entity) error {
		cur.Properties = props
		return nil
	}, e)
}

// Update runs a read-modify-write of a logical entity: it reads it (a new, empty Entity if
// there is none), calls fn to change it, and writes every chunk in one transaction
// conditional on the chunks it read; when another writer got there first it starts again
// with the backoff of Options.Conflict. fn may run several times and must only compute
// from its argument; an error from fn stops Update and is returned as it is. It returns
// the entity as written.
//
// Errors: those of Put, and fn's.
func (s *Store) Update(ctx context.Context, pk, rk string, fn func(e *Entity) error) (*Entity, error) {
	if fn == nil {
		return nil, errs.Invalid("fn", "is nil")
	}
	out := &Entity{PartitionKey: pk, RowKey: rk}
	err := s.update(ctx, pk, rk, fn, out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) update(ctx context.Context, pk, rk string, fn func(e *Entity) error, out *Entity) error {
	if err := s.checkKeys(pk, rk); err != nil {
		return err
	}
	err := retry.Optimistic(ctx, s.conflict, s.conflictOp("wide update", pk, rk), func(ctx context.Context, _ int) error {
		cur, err := s.Get(ctx, pk, rk)
		if errors.Is(err, repo.ErrNotFound) {
			cur, err = &Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]any{}}, nil
		}
		if err != nil {
			return err
		}
		stored := cur.chunks
		cur.Properties = maps.Clone(cur.Properties)
		if err := fn(cur); err != nil {
			return &fnError{err}
		}
		cur.PartitionKey, cur.RowKey = pk, rk // fn may not move the entity
		if err := s.write(ctx, cur, stored); err != nil {
			return err
		}
		*out = *cur
		return nil
	})
	var fe *fnError
	if errors.As(err, &fe) {
		return fe.err
	}
	return err
}

// SetProperty sets one property of a logical entity with one request: a merge of that
// property into the chunk that holds it (Options.ChunkOf), as the guide does to update
// one day's count. The other chunks, the other properties and the revision are untouched,
// so concurrent SetProperty calls on different properties never conflict. Use Update when
// several properties must change together.
//
// A merge cannot see the chunk's size: a value that makes the chunk exceed 252 properties
// or 1 MiB is refused by the service (Azurite does not check). If the entity is stored
// with another number of chunks than Options.Chunks, the merge finds no chunk and
// SetProperty falls back to Update, which rewrites the entity in the current layout.
//
// Errors: errs.ErrNotFound (no such entity), errs.ErrInvalidInput (keys, a reserved or invalid name,
// a value codec refuses; nothing sent), errs.ErrTransient, *errs.ServiceError.
func (s *Store) SetProperty(ctx context.Context, pk, rk, name string, value any) error {
	if err := s.checkKeys(pk, rk); err != nil {
		return err
	}
	if err := s.checkName(name); err != nil {
		return err
	}
	i, err := s.chunkIndex(name, s.chunks)
	if err != nil {
		return err
	}
	c := &codec.Entity{PartitionKey: pk, RowKey: chunkKey(rk, s.chunks, i), Properties: map[string]any{name: value}}
	if _, err := codec.EncodeEntity(c); err != nil {
		return err
	}
	err = s.table.Update(ctx, c, &repo.UpdateOptions{Mode: repo.Merge, Unconditional: true})
	if !errors.Is(err, repo.ErrNotFound) {
		return err
	}
	// No chunk at that key: no entity, or one stored in another layout.
	if _, err := s.Get(ctx, pk, rk); err != nil {
		return err
	}
	_, err = s.Update(ctx, pk, rk, func(e *Entity) error {
		e.Properties[name] = value
		return nil
	})
	return err
}

// Delete removes a logical entity: it reads the keys of its chunks, then deletes them all
// in one transaction, so that readers see the whole entity or nothing. A missing entity is
// success, so Delete can be run again after a crash. Two requests.
//
// Errors: errs.ErrInvalidInput (keys; nothing sent), errs.ErrTransient, *repo.ActionError,
// *errs.ServiceError.
func (s *Store) Delete(ctx context.Context, pk, rk string) error {
	if err := s.checkKeys(pk, rk); err != nil {
		return err
	}
	return retry.Optimistic(ctx, s.conflict, s.conflictOp("wide delete", pk, rk), func(ctx context.Context, _ int) error {
		q := repo.Query{Filter: filter.RowKeyPrefix(pk, keys.Join(rk, "")), Select: []string{"PartitionKey", "RowKey"}}
		found, err := s.table.Collect(ctx, q)
		if err != nil {
			return err
		}
		var actions []repo.Action
		for _, c := range found {
			if _, _, ok := parseChunkKey(rk, c.RowKey); ok {
				actions = append(actions, s.table.DeleteAction(pk, c.RowKey, &repo.DeleteOptions{ETag: c.ETag}))
			}
		}
		if len(actions) == 0 {
			return nil
		}
		// A chunk gone or changed meanwhile: ErrNotFound or ErrPreconditionFailed, read again.
		// Apart only where the store cannot delete the keys in a transaction (see write).
		_, err = repo.SubmitOrSplit(ctx, actions...)
		return err
	})
}
