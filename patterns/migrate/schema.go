package migrate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/internal/rangejob"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// SchemaSpec declares a schema evolution without a key change: every entity of Table
// carries its schema version in VersionProperty (absent: version 1), and Upgrades[i]
// turns an entity of version i+1 into version i+2, so the latest version is
// len(Upgrades)+1 and T is its shape.
type SchemaSpec[T any] struct {
	// Service is the account of Table.
	Service *aztables.ServiceClient
	// Table is the table, typed by the latest shape.
	Table *repo.Table[T]
	// VersionProperty names the version property (an Edm.Int32). Defaults to
	// DefaultVersionProperty.
	VersionProperty string
	// Upgrades are the upgrade functions, one per version, on the dynamic entity (rename,
	// split, compute properties). Each must be pure: it runs on every read of an older
	// version and again on every rewrite round.
	Upgrades []func(e *codec.Entity) error
	// Downgrades are the inverses, one per upgrade when given: Downgrades[i] turns an
	// entity of version i+2 back into version i+1. A staged migration (Name) with them
	// writes the version before the latest until Backfill and can be aborted; without
	// them it writes the latest from the start and Abort is refused (schema_stages.go).
	Downgrades []func(e *codec.Entity) error
	// Name, when set, takes the evolution through the migration's stages: it identifies
	// the migration in the state record of Table (the one a re-keying migration of Table
	// would use) and in its jobs, under the rules of Spec.Name. Empty: no stages, every
	// write at the latest version.
	Name string
	// Control names the table of state records (Spec.Control). Defaults to
	// DefaultControlTable.
	Control string
}

// DefaultVersionProperty is SchemaSpec.VersionProperty's default.
const DefaultVersionProperty = "SchemaVersion"

// SchemaOptions tunes a Schema. The zero value (and nil) gives the defaults.
type SchemaOptions struct {
	// WriteBack writes an entity read at an older version back at the latest one (a
	// replace If-Match the ETag read; a conflict leaves it, the next read or the rewrite
	// does it). Costs one write per upgraded read. Defaults to false.
	WriteBack bool
	// Retry is the policy of the requests. Defaults to retry's defaults.
	Retry retry.Policy
	// Concurrency bounds the entities a rewrite page handles at once. Defaults to 8.
	Concurrency int
	// Logger receives the rewrite's counts. Defaults to zap.NewNop().
	Logger *zap.Logger
	// Refresh, WriteTimeout and ClockSkew are a staged migration's (SchemaSpec.Name)
	// staleness bound, as Options'; every process must use the same values.
	Refresh, WriteTimeout, ClockSkew time.Duration
	// Queue receives the continuations of a staged migration's range jobs run by a
	// worker (Register), as Options.Queue.
	Queue *queueworker.Client
	// PageSize is the most rows a range job's page reads (at most repo.MaxPageSize, the
	// default).
	PageSize int
}

// Schema reads every version of a table's entities as the latest (lazy upgrade, with an
// optional write-back), writes the latest, and rewrites the older ones in the background
// (Rewrite, RewriteAll). Safe for concurrent use.
type Schema[T any] struct {
	spec SchemaSpec[T]
	opts SchemaOptions
	raw  *repo.Table[codec.Entity]
	// m holds a staged migration's state record and stage rules (nil without Name).
	m *Migration[T, T]
}

// NewSchema declares a schema evolution. It does no I/O.
//
// Errors: ErrInvalidInput.
func NewSchema[T any](spec SchemaSpec[T], opts *SchemaOptions) (*Schema[T], error) {
	var o SchemaOptions
	if opts != nil {
		o = *opts
	}
	o.Concurrency = cmp.Or(o.Concurrency, 8)
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	spec.VersionProperty = cmp.Or(spec.VersionProperty, DefaultVersionProperty)
	switch {
	case spec.Service == nil || spec.Table == nil:
		return nil, errs.Invalid("SchemaSpec.Service/Table", "required")
	case len(spec.Upgrades) == 0:
		return nil, errs.Invalid("SchemaSpec.Upgrades", "at least one upgrade")
	case spec.Table.Codec().Encrypted():
		return nil, errs.Invalid("SchemaSpec.Table", "encrypted tables cannot be evolved")
	case o.Concurrency < 0:
		return nil, errs.Invalid("SchemaOptions.Concurrency", "must not be negative")
	case o.PageSize < 0 || o.PageSize > repo.MaxPageSize:
		return nil, errs.Invalid("SchemaOptions.PageSize", "must be from 0 to %d", repo.MaxPageSize)
	case spec.Name != "" && !nameRE.MatchString(spec.Name):
		return nil, errs.Invalid("SchemaSpec.Name", "must match %s", nameRE)
	case len(spec.Downgrades) != 0 && len(spec.Downgrades) != len(spec.Upgrades):
		return nil, errs.Invalid("SchemaSpec.Downgrades", "one per upgrade, or none")
	}
	for i, d := range spec.Downgrades {
		if d == nil {
			return nil, errs.Invalid("SchemaSpec.Downgrades", "downgrade %d is nil", i)
		}
	}
	for i, u := range spec.Upgrades {
		if u == nil {
			return nil, errs.Invalid("SchemaSpec.Upgrades", "upgrade %d is nil", i)
		}
	}
	if _, ok := spec.Table.Codec().Property(spec.VersionProperty); ok {
		return nil, errs.Invalid("SchemaSpec.VersionProperty", "T maps %s itself", spec.VersionProperty)
	}
	raw, err := repo.New[codec.Entity](spec.Service, spec.Table.Name(), &repo.Options{Retry: o.Retry, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	sc := &Schema[T]{spec: spec, opts: o, raw: raw}
	if spec.Name != "" {
		if sc.m, err = sc.staged(); err != nil {
			return nil, err
		}
	}
	return sc, nil
}

// Latest is the latest schema version.
func (s *Schema[T]) Latest() int { return len(s.spec.Upgrades) + 1 }

// version reads an entity's version: stored data, checked (an Edm.Int32 from 1 to
// Latest; a newer version is refused rather than read without its new properties).
func (s *Schema[T]) version(e *codec.Entity) (int, error) {
	v, ok := e.Properties[s.spec.VersionProperty]
	if !ok {
		return 1, nil
	}
	n, ok := v.(int32)
	if !ok || n < 1 || int(n) > s.Latest() {
		return 0, errs.Invalid(s.spec.VersionProperty, "(%s, %s): not a version from 1 to %d", e.PartitionKey, e.RowKey, s.Latest())
	}
	return int(n), nil
}

// upgrade brings e to the latest version in place and reports whether it changed.
func (s *Schema[T]) upgrade(e *codec.Entity) (bool, error) {
	v, err := s.version(e)
	if err != nil || v == s.Latest() {
		return false, err
	}
	if e.Properties == nil {
		e.Properties = map[string]any{}
	}
	for ; v < s.Latest(); v++ {
		if err := s.spec.Upgrades[v-1](e); err != nil {
			return false, &refusal{errs.Invalid("SchemaSpec.Upgrades", "version %d of (%s, %s): %v", v, e.PartitionKey, e.RowKey, errs.Redact(err))}
		}
	}
	e.Properties[s.spec.VersionProperty] = int32(s.Latest())
	return true, nil
}

// Get reads one entity at whatever version it is stored and returns it in the latest
// shape, its ETag the stored one. With WriteBack, an upgraded entity is written back
// If-Match that ETag (a conflict or failure of the write-back is not an error: the
// entity read is returned).
//
// Errors: errs.ErrNotFound, ErrInvalidInput (an unknown version, a failing upgrade, a
// state record that does not validate), ErrInProgress (a staged migration's table is in
// another migration), ErrTransient, *repo.Error.
func (s *Schema[T]) Get(ctx context.Context, pk, rk string) (T, error) {
	var out T
	latest, ctx, cancel, err := s.rules(ctx)
	defer cancel()
	if err != nil {
		return out, err
	}
	e, err := s.raw.Get(ctx, pk, rk)
	if err != nil {
		return out, err
	}
	changed, err := s.upgrade(&e)
	if err != nil {
		return out, err
	}
	if changed && s.opts.WriteBack && latest {
		w := e
		if werr := s.raw.Update(ctx, &w, nil); werr == nil {
			e.ETag = w.ETag
		}
	}
	return out, s.decode(&e, &out)
}

func (s *Schema[T]) decode(e *codec.Entity, out *T) error {
	c := *e
	c.Properties = map[string]any{}
	for k, v := range e.Properties {
		if k != s.spec.VersionProperty {
			c.Properties[k] = v
		}
	}
	data, err := codec.EncodeEntity(&c)
	if err == nil {
		err = s.spec.Table.Codec().Decode(data, out)
	}
	s.spec.Table.Codec().SetETag(out, e.ETag)
	return err
}

// Upsert writes v at the version the stage's rules write (the latest, or in a staged
// migration with Downgrades before Backfill and while aborting the version before it:
// schema_stages.go) by replace. Update replaces it If-Match v's ETag when set; Insert
// adds it. On success v's ETag holds the new one. An Upsert, and an Update without an
// ETag, read the entity first and write If-Match it, or insert where there was none
// (schema_abandoned_write.go): an abandoned request never puts an older value back.
//
// Errors: ErrInvalidInput (nothing sent), errs.ErrPreconditionFailed and
// errs.ErrNotFound (Update), errs.ErrAlreadyExists (Insert), ErrInProgress (as Get),
// ErrOutcomeUnknown, ErrTransient (also another writer winning every round of an
// Upsert), *repo.Error.
func (s *Schema[T]) Upsert(ctx context.Context, v *T) error { return s.put(ctx, v, opUpsert) }

// Update: see Upsert.
func (s *Schema[T]) Update(ctx context.Context, v *T) error { return s.put(ctx, v, opUpdate) }

// Insert: see Upsert.
func (s *Schema[T]) Insert(ctx context.Context, v *T) error { return s.put(ctx, v, opInsert) }

// Delete removes the entity (pk, rk) at whatever version it is stored: opts.ETag makes
// it conditional, nil deletes whatever is stored (repo.Table.Delete's shape), read first
// and deleted If-Match the ETag read, as Upsert.
//
// Errors: ErrInvalidInput (keys), errs.ErrNotFound, errs.ErrPreconditionFailed,
// ErrOutcomeUnknown, ErrTransient, *repo.Error.
func (s *Schema[T]) Delete(ctx context.Context, pk, rk string, opts *repo.DeleteOptions) error {
	e := &codec.Entity{PartitionKey: pk, RowKey: rk}
	if opts != nil {
		e.ETag = opts.ETag
	}
	return s.send(ctx, opDelete, e)
}

func (s *Schema[T]) put(ctx context.Context, v *T, o op) error {
	if v == nil {
		return errs.Invalid("value", "nil")
	}
	latest, ctx, cancel, err := s.rules(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	data, err := s.spec.Table.Codec().Encode(v)
	if err != nil {
		return err
	}
	e, err := codec.DecodeEntity(data)
	if err != nil {
		return err
	}
	if e.Properties == nil {
		e.Properties = map[string]any{}
	}
	e.Properties[s.spec.VersionProperty] = int32(s.Latest())
	if !latest {
		if err := s.downgrade(e); err != nil {
			return err
		}
	}
	e.ETag = s.spec.Table.Codec().ETag(v)
	if err = s.send(ctx, o, e); err == nil {
		s.spec.Table.Codec().SetETag(v, e.ETag)
	}
	return err
}

// Rewrite runs one page of the background rewrite over the partitions from <= PK < to
// (empty: open), after the checkpoint token: every entity of an older version is
// replaced by its upgrade If-Match the ETag read; a conflict reads it again (a writer
// that wrote meanwhile wrote the latest version, which is left as it is). It returns the
// checkpoint of the next page ("" at the end).
//
// Errors: ErrInvalidInput (bounds, token; a staged migration, whose rewrite runs in its
// stages), ErrTransient, *repo.Error. An entity of an unknown version is left and counted in SchemaReport.Unknown.
func (s *Schema[T]) Rewrite(ctx context.Context, from, to, token string) (string, SchemaReport, error) {
	rep := SchemaReport{}
	if s.m != nil {
		return "", rep, errs.Invalid("Rewrite", "a staged schema migration rewrites through its range jobs (RunJob)")
	}
	sel := rangejob.Selection{PartitionKeyFrom: from, PartitionKeyTo: to}
	if err := sel.Validate(); err != nil {
		return "", rep, err
	}
	if len(token) > 4096 {
		return "", rep, errs.TooLarge("token", "checkpoint too long", len(token), 4096)
	}
	page, err := s.raw.Pages(repo.Query{Filter: filter.PartitionRange(from, to), Token: token}).Next(ctx)
	if err != nil {
		return "", rep, tableGone(err)
	}
	if err := inSelection(sel, page.Items); err != nil {
		return "", rep, err
	}
	var (
		mu     sync.Mutex
		counts [3]int // rewritten, current, unknown
	)
	err = each(ctx, s.opts.Concurrency, page.Items, func(ctx context.Context, e *codec.Entity, _ *Report) error {
		n, err := s.rewriteOne(ctx, *e)
		mu.Lock()
		defer mu.Unlock()
		if rep.refusedBy(err, e.PartitionKey, e.RowKey) {
			return nil
		}
		if errors.Is(err, errs.ErrInvalidInput) {
			n, err = 2, nil
		}
		counts[n]++
		return err
	}, &Report{})
	rep.Scanned = len(page.Items)
	rep.Rewritten, rep.Current, rep.Unknown = counts[0], counts[1], counts[2]
	return page.Token, rep, err
}

// inSelection refuses a page that holds a row outside sel: what the store returns is
// untrusted, and a row outside the rewrite's partitions is not its to write.
//
// Errors: ErrInvalidInput naming the row's keys.
func inSelection(sel rangejob.Selection, rows []codec.Entity) error {
	for _, e := range rows {
		if err := sel.CheckPosition("scan", rangejob.Key{PartitionKey: e.PartitionKey, RowKey: e.RowKey}); err != nil {
			return err
		}
	}
	return nil
}

// rewriteOne brings one entity to the latest version: 0 when it wrote, 1 when the
// entity was current (or gone).
func (s *Schema[T]) rewriteOne(ctx context.Context, e codec.Entity) (int, error) {
	return s.replace(ctx, e, "rewrite", s.upgrade)
}

// replace is the optimistic loop of the rewrite and the downgrade: change e in place
// (false: nothing to write) and replace it If-Match the ETag read; a conflict (a writer
// wrote or deleted it meanwhile, or the response was lost) reads it again and starts
// over, so a newer write is never replaced by the change of an older version. 0 when
// it wrote, 1 when there was nothing to write (or the entity is gone).
func (s *Schema[T]) replace(ctx context.Context, e codec.Entity, what string, change func(*codec.Entity) (bool, error)) (int, error) {
	for round := 1; ; round++ {
		changed, err := change(&e)
		if err != nil || !changed {
			return 1, err
		}
		s.beforeWrite(ctx, e.PartitionKey, e.RowKey)
		err = s.raw.Update(ctx, &e, nil)
		if err == nil {
			return 0, nil
		}
		if !conflict(err) {
			return 1, err
		}
		if round >= maxRounds {
			return 1, fmt.Errorf("migrate: %s of (%s, %s): changed in each of %d rounds: %w", what, e.PartitionKey, e.RowKey, round, errs.ErrTransient)
		}
		if e, err = s.raw.Get(ctx, e.PartitionKey, e.RowKey); errors.Is(err, repo.ErrNotFound) {
			return 1, nil
		} else if err != nil {
			return 1, err
		}
	}
}

// RewriteAll runs Rewrite over the whole table.
//
// Errors: as Rewrite.
func (s *Schema[T]) RewriteAll(ctx context.Context) (SchemaReport, error) {
	total := SchemaReport{}
	for token := ""; ; {
		next, rep, err := s.Rewrite(ctx, "", "", token)
		total.Scanned += rep.Scanned
		total.Rewritten += rep.Rewritten
		total.Current += rep.Current
		total.Unknown += rep.Unknown
		total.Refused += rep.Refused
		total.RefusedKeys = append(total.RefusedKeys, rep.RefusedKeys[:min(len(rep.RefusedKeys), MaxReportKeys-len(total.RefusedKeys))]...)
		if err != nil || next == "" {
			s.opts.Logger.Info("migrate: schema rewrite", zap.Int("scanned", total.Scanned), zap.Int("rewritten", total.Rewritten), zap.Int("unknown", total.Unknown))
			return total, err
		}
		token = next
	}
}

// SchemaReport counts what a rewrite saw: entities scanned, rewritten, already at the
// latest version, of a version it does not know (Unknown), and those an upgrade or
// downgrade function refused (Refused, with their keys in RefusedKeys, up to
// MaxReportKeys), all left as they are. A staged migration's jobs also count the
// entities downgraded (Aborting) and those verify found below the latest version
// (Stale), by partition (Partitions) and by keys (Keys, up to MaxReportKeys): never
// values.
type SchemaReport struct {
	Scanned, Rewritten, Current, Unknown int
	Downgraded, Stale                    int
	Partitions                           map[string]int
	Keys                                 [][2]string
	Refused                              int
	RefusedKeys                          [][2]string
}
