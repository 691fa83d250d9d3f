package largeentity

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Defaults of Options.
const (
	// DefaultInlineLimit is the content size up to which a part is stored inside the entity.
	DefaultInlineLimit = 16 << 10
	// MaxInlineLimit is the largest Options.InlineLimit: the stored form of inline content
	// (base64 in a JSON document) must fit in one 64 KiB Edm.String.
	MaxInlineLimit = maxInlineLimit
	// DefaultMaxPartBytes is the default size limit of one part.
	DefaultMaxPartBytes = 256 << 20
	// DefaultMaxWriteTime is the default bound on the time between the first upload of a
	// write and its entity write.
	DefaultMaxWriteTime = 5 * time.Minute
	// DefaultSweepGrace is the default age under which the sweeper never deletes a blob.
	DefaultSweepGrace = time.Hour
	// DefaultConcurrency is the default number of blob transfers (or sweep steps) run at once.
	DefaultConcurrency = 4
	// maxContentType bounds a part's content type (it is sent as a header).
	maxContentType = 255
)

// Sentinel errors of this package, in addition to the SDK's (errs.ErrNotFound, ...).
var (
	// ErrContentMismatch: content read back does not have the size or SHA-256 the entity
	// records (the blob was changed or damaged outside the Store).
	ErrContentMismatch = errors.New("largeentity: content does not match the entity's size or SHA-256")
	// ErrTampered: a stored reference names a blob that this Store would not have generated
	// for that entity and property (another entity's blob, a blob outside the Store's
	// prefix, any name of someone's choosing), or records a size no blob of the Store can
	// have. The reference was edited outside the Store: nothing is downloaded or deleted.
	// It is codec.ErrTampered, the SDK's sentinel for stored data that failed
	// authentication.
	ErrTampered = codec.ErrTampered
	// ErrDangling: the entity, unchanged, points to a blob that does not exist. The Store
	// never leaves this state; it means a blob was deleted outside the Store. It is reported
	// together with errs.ErrNotFound.
	ErrDangling = errors.New("largeentity: the entity points to a missing blob")
)

// Options configures a Store. The zero value (or nil) gives the documented defaults.
type Options struct {
	// Prefix starts the name of every blob of this Store, followed by "/": one container
	// can then hold the blobs of several tables, and the sweeper lists only its own.
	// Defaults to the table's name.
	Prefix string
	// InlineLimit is the largest content, in bytes, stored inside the entity rather than
	// in a blob (base64 in the part's property): a read of a small part then costs no extra
	// request. Defaults to DefaultInlineLimit (16 KiB); at most MaxInlineLimit; -1 stores
	// every part in a blob. The entity as a whole must still stay under 1 MiB.
	InlineLimit int
	// MaxPartBytes is the largest content of one part. Defaults to DefaultMaxPartBytes
	// (256 MiB). A larger part is refused before any request.
	MaxPartBytes int64
	// MaxWriteTime bounds the time from the first blob upload of a write to its entity
	// write: a write that has not sent its entity write by then gives up and leaves its new
	// blobs to the sweeper. Defaults to DefaultMaxWriteTime (5 minutes).
	MaxWriteTime time.Duration
	// SweepGrace is the age (by the service's clock) under which the sweeper never deletes
	// a blob, even an unreferenced one, because a write may still be about to point its
	// entity at it. Defaults to DefaultSweepGrace (1 hour); it must be at least twice
	// MaxWriteTime (see the package doc, "The sweeper and its race").
	SweepGrace time.Duration
	// Sweeps, if set, is the queue of targeted sweeps: every write that uploads a blob
	// first enqueues a SweepMessage for its entity, visible after SweepGrace plus
	// MaxWriteTime (when the write's blobs are old enough to judge),
	// and Delete enqueues one before it deletes; a worker running HandleSweep (see
	// Register) then removes whatever the operation left behind, even if its process died.
	// Sweep remains the backstop. Costs one enqueue per such write. Defaults to none.
	Sweeps *queueworker.Client
	// Concurrency bounds the blob transfers of one call, and the entity reads and blob
	// deletes a sweep runs at once. Defaults to DefaultConcurrency (4).
	Concurrency int
	// Retry is the policy for transient failures of blob requests (table requests use the
	// Table's own policy). Zero fields take retry's defaults; its Logger defaults to the
	// table's.
	Retry retry.Policy
	// Conflict is the backoff of an Upsert or Delete that lost a race to another writer
	// and starts again from its read. Zero fields take retry.Conflict()'s values, field
	// by field; its Logger defaults to the table's.
	Conflict retry.Policy
}

// withDefaults fills o from its documented defaults; table gives the default Prefix and
// the logger (the Store logs the blobs it leaves to the sweeper through the table's
// logger, repo.Table.Logger).
func (o *Options) withDefaults(table string, log *zap.Logger) Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.Prefix == "" {
		out.Prefix = table
	}
	if out.InlineLimit == 0 {
		out.InlineLimit = DefaultInlineLimit
	}
	if out.MaxPartBytes == 0 {
		out.MaxPartBytes = DefaultMaxPartBytes
	}
	if out.MaxWriteTime == 0 {
		out.MaxWriteTime = DefaultMaxWriteTime
	}
	if out.SweepGrace == 0 {
		out.SweepGrace = DefaultSweepGrace
	}
	if out.Concurrency == 0 {
		out.Concurrency = DefaultConcurrency
	}
	out.Retry = out.Retry.Or(retry.Policy{Logger: log}).WithDefaults()
	out.Conflict = out.Conflict.Or(retry.Policy{Logger: log}.Or(retry.Conflict()))
	return out
}

func (o Options) validate() error {
	switch {
	case len(o.Prefix) > 256 || strings.HasSuffix(o.Prefix, "/") || strings.HasPrefix(o.Prefix, "/") ||
		strings.ContainsAny(o.Prefix, "\\?#") || strings.Contains(o.Prefix, "//"):
		return errs.Invalid("Options.Prefix", "must be at most 256 characters, without leading or trailing '/', '//', '\\', '?' or '#', got %q", o.Prefix)
	case o.InlineLimit < -1 || o.InlineLimit > MaxInlineLimit:
		return errs.Invalid("Options.InlineLimit", "must be -1 (never inline) or 1 to %d bytes, got %d", MaxInlineLimit, o.InlineLimit)
	case o.MaxPartBytes < 1:
		return errs.Invalid("Options.MaxPartBytes", "must be positive, got %d", o.MaxPartBytes)
	case o.MaxWriteTime < 0:
		return errs.Invalid("Options.MaxWriteTime", "must be positive, got %v", o.MaxWriteTime)
	case o.SweepGrace < 2*o.MaxWriteTime:
		return errs.Invalid("Options.SweepGrace", "must be at least twice MaxWriteTime (%v), got %v: a shorter grace lets the sweeper delete a blob that a slow write is about to reference", o.MaxWriteTime, o.SweepGrace)
	case o.Sweeps != nil && o.SweepGrace+o.MaxWriteTime > maxVisibilityDelay:
		return errs.Invalid("Options.SweepGrace", "plus MaxWriteTime must be at most 7 days with a sweep queue (a message stays invisible at most 7 days), got %v", o.SweepGrace)
	case o.Concurrency < 1:
		return errs.Invalid("Options.Concurrency", "must be at least 1, got %d", o.Concurrency)
	}
	return o.Retry.Validate()
}

// Store keeps entities of type T whose Blob fields hold large content: in the table through
// a repo.Table[T], and in one blob container. See the package doc for the write order and
// what it guarantees. A Store is safe for concurrent use; a value passed to one of its
// writes must not be used by others until the write returns.
type Store[T any] struct {
	table     *repo.Table[T]
	container *container.Client
	cname     string
	opts      Options
	log       *zap.Logger // the table's
	parts     []partField

	seams seams // set by tests only
}

// partField is one Blob field of T.
type partField struct {
	index    []int  // reflect index path from T
	goName   string // Go field name
	property string // stored property name
}

var blobType = reflect.TypeFor[Blob]()

// New returns a Store over table for T's entities and the blob container named
// containerName (which CreateIfNotExists creates). The Store logs through the table's
// logger (repo.Options.Logger). It sends nothing.
//
// T must have an ETag field (the Store's writes are conditional) and at least one field of
// type Blob; Blob fields may sit in embedded structs. A *Blob field is refused: the zero
// Blob already means "absent".
//
// Errors: errs.ErrInvalidInput (an *errs.InvalidInputError) for a nil table or client, a bad
// container name, invalid options, or a type T without an ETag or Blob field.
func New[T any](table *repo.Table[T], blobs *azblob.Client, containerName string, opts *Options) (*Store[T], error) {
	if table == nil || blobs == nil {
		return nil, errs.Invalid("Store", "table and blob client are required")
	}
	if err := codec.ValidateContainerName(containerName); err != nil {
		return nil, err
	}
	o := opts.withDefaults(table.Name(), table.Logger())
	if err := o.validate(); err != nil {
		return nil, err
	}
	if !table.Codec().HasETag() {
		return nil, errs.Invalid("T", "%s has no ETag field (tag `table:\",etag\"`): the Store's writes are conditional", reflect.TypeFor[T]())
	}
	parts, err := findParts(reflect.TypeFor[T](), nil)
	if err != nil {
		return nil, err
	}
	s := &Store[T]{table: table, container: blobs.ServiceClient().NewContainerClient(containerName), cname: containerName, opts: o, log: table.Logger()}
	for _, p := range parts {
		name, ok := table.Codec().PropertyName(p.goName)
		if !ok {
			continue // tagged "-": not stored, not ours
		}
		p.property = name
		s.parts = append(s.parts, p)
	}
	if len(s.parts) == 0 {
		return nil, errs.Invalid("T", "%s has no stored field of type largeentity.Blob", reflect.TypeFor[T]())
	}
	return s, nil
}

// findParts returns the Blob fields of the struct type t, descending into embedded structs
// the way package codec flattens them.
func findParts(t reflect.Type, prefix []int) ([]partField, error) {
	if t.Kind() != reflect.Struct {
		return nil, errs.Invalid("T", "%s is not a struct", t)
	}
	var out []partField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		idx := append(append([]int(nil), prefix...), i)
		tag := f.Tag.Get("table")
		if tag == "-" {
			continue
		}
		switch {
		case f.Type == blobType:
			if !f.IsExported() {
				continue
			}
			out = append(out, partField{index: idx, goName: f.Name})
		case f.Type.Kind() == reflect.Pointer && f.Type.Elem() == blobType:
			return nil, errs.Invalid(f.Name, "is a *largeentity.Blob: use largeentity.Blob (its zero value is \"absent\")")
		case f.Anonymous && strings.Split(tag, ",")[0] == "":
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				sub, err := findParts(et, idx)
				if err != nil {
					return nil, err
				}
				out = append(out, sub...)
			}
		}
	}
	return out, nil
}

// partsOf returns pointers to the Blob fields of v; a field behind a nil embedded pointer
// is left out unless alloc is set, in which case the pointer is allocated.
func (s *Store[T]) partsOf(v *T, alloc bool) []*Blob {
	rv := reflect.ValueOf(v).Elem()
	out := make([]*Blob, len(s.parts))
	for i, p := range s.parts {
		f, err := rv.FieldByIndexErr(p.index)
		if err != nil {
			if !alloc {
				continue
			}
			f = fieldAlloc(rv, p.index)
		}
		out[i] = f.Addr().Interface().(*Blob)
	}
	return out
}

func fieldAlloc(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// Table returns the repository of the entities.
func (s *Store[T]) Table() *repo.Table[T] { return s.table }

// Container returns the client of the blob container.
func (s *Store[T]) Container() *container.Client { return s.container }

// Prefix returns the prefix of this Store's blob names (without the trailing "/").
func (s *Store[T]) Prefix() string { return s.opts.Prefix }

// CreateIfNotExists creates the table and the blob container; existing ones are success.
//
// Errors: as repo.Table.CreateIfNotExists; for the container errs.ErrTransient or an
// *errs.ServiceError.
func (s *Store[T]) CreateIfNotExists(ctx context.Context) error {
	if err := s.table.CreateIfNotExists(ctx); err != nil {
		return err
	}
	return retry.Do(ctx, s.opts.Retry, retry.Op{Name: "create container", Resource: s.cname}, func(ctx context.Context, _ int) error {
		_, err := s.container.Create(ctx, nil)
		if err = errs.Wrap(err, "create container", s.cname, "", ""); errors.Is(err, errs.ErrAlreadyExists) {
			return nil
		}
		return err
	})
}

// keyDir is the directory of an entity's blobs: the Store's prefix and a hash of the
// entity's keys (keys may hold characters and lengths a blob name cannot).
func (s *Store[T]) keyDir(pk, rk string) string {
	h := sha256.New()
	h.Write([]byte(pk))
	h.Write([]byte{0})
	h.Write([]byte(rk))
	return s.opts.Prefix + "/" + hex.EncodeToString(h.Sum(nil)[:16]) + "/"
}

// partPrefix is what every blob name of one part of entity (pk, rk) starts with.
func (s *Store[T]) partPrefix(pk, rk, property string) string {
	return s.keyDir(pk, rk) + property + "."
}

// Shape of the end of a generated name: "20060102T150405Z." and 24 lowercase hex digits.
const (
	nameTimeLayout = "20060102T150405Z"
	nameRandomHex  = 24
)

// newName returns a fresh blob name for a part of entity (pk, rk): never used before, so a
// write never overwrites content that an entity may reference.
func (s *Store[T]) newName(pk, rk, property string) string {
	var r [nameRandomHex / 2]byte
	_, _ = rand.Read(r[:])
	return s.partPrefix(pk, rk, property) + time.Now().UTC().Format(nameTimeLayout) + "." + hex.EncodeToString(r[:])
}

// generated reports whether name is one newName could have returned under prefix (a
// partPrefix): the prefix, a timestamp, a dot and the random part, nothing else.
func generated(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || len(rest) != len(nameTimeLayout)+1+nameRandomHex || rest[len(nameTimeLayout)] != '.' {
		return false
	}
	if _, err := time.Parse(nameTimeLayout, rest[:len(nameTimeLayout)]); err != nil {
		return false
	}
	for _, c := range []byte(rest[len(nameTimeLayout)+1:]) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// validateKeys checks keys that address an entity (aztables cannot address an empty
// PartitionKey).
func validateKeys(pk, rk string) error {
	if pk == "" {
		return errs.Invalid("PartitionKey", "is empty")
	}
	if err := codec.ValidateKey("PartitionKey", pk); err != nil {
		return err
	}
	return codec.ValidateKey("RowKey", rk)
}
