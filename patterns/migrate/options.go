package migrate

import (
	"cmp"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Spec declares a migration: what it moves, from where, to where, and how.
type Spec[O, N any] struct {
	// Name identifies the migration in its state record, its copies and its jobs:
	// 1 to 63 characters of a-z, 0-9 and '-', starting with a letter.
	Name string
	// Service is the account that holds Source, Target and the control table: the
	// migration reads and writes them as dynamic entities through it (the copies carry
	// properties of their own).
	Service *aztables.ServiceClient
	// Source is the table in the old layout, Target the table of the new layout (the
	// same table or another one on Service).
	Source *repo.Table[O]
	Target *repo.Table[N]
	// Keys maps an entity's old keys to its new keys. It must be a pure function of the
	// keys (a delete knows only those) and one-to-one (Plan checks).
	Keys func(pk, rk string) (newPK, newRK string, err error)
	// Transform maps an old value to its new shape; the keys it sets are replaced by
	// those of Keys. It must be pure: it runs again whenever a copy is made again.
	Transform func(O) (N, error)
	// Control names the table of state records (one per migrated source table, see
	// State). Defaults to DefaultControlTable.
	Control string
}

// DefaultControlTable is the control table of Spec.Control's default.
const DefaultControlTable = "TpMigrations"

// Options tunes a migration. The zero value (and nil) gives the documented defaults; every
// process of the application must use the same Refresh, WriteTimeout and ClockSkew.
type Options struct {
	// Refresh is how long a process uses the state record it read before reading it
	// again. Defaults to 10 s.
	Refresh time.Duration
	// WriteTimeout bounds every write and read made through the migration (its own
	// requests and retries). Defaults to 10 s.
	WriteTimeout time.Duration
	// ClockSkew bounds how far any process's clock is from the service's. Defaults to
	// 2 s.
	ClockSkew time.Duration
	// Retry is the policy of the migration's own requests. Defaults to retry's defaults.
	Retry retry.Policy
	// Concurrency bounds the entities a range job handles at once. Defaults to 8.
	Concurrency int
	// PageSize bounds the rows one page of a range job scans, so how much a delivery
	// does before it checkpoints (at most repo.MaxPageSize). Defaults to
	// repo.MaxPageSize (1,000).
	PageSize int
	// Queue receives the continuations of range jobs run by a worker (Register). Without
	// it a delivery runs its whole range.
	Queue *queueworker.Client
	// Logger receives progress logs (keys and counts only). Defaults to zap.NewNop().
	Logger *zap.Logger
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	out.Refresh = cmp.Or(out.Refresh, 10*time.Second)
	out.WriteTimeout = cmp.Or(out.WriteTimeout, 10*time.Second)
	out.ClockSkew = cmp.Or(out.ClockSkew, 2*time.Second)
	out.Concurrency = cmp.Or(out.Concurrency, 8)
	out.PageSize = cmp.Or(out.PageSize, repo.MaxPageSize)
	if out.Logger == nil {
		out.Logger = zap.NewNop()
	}
	return out
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

func (s *Spec[O, N]) validate() error {
	switch {
	case !nameRE.MatchString(s.Name):
		return errs.Invalid("Spec.Name", "must match %s", nameRE)
	case s.Service == nil:
		return errs.Invalid("Spec.Service", "required")
	case s.Source == nil || s.Target == nil:
		return errs.Invalid("Spec.Source/Target", "required")
	case s.Keys == nil || s.Transform == nil:
		return errs.Invalid("Spec.Keys/Transform", "required")
	case s.Source.Codec().Encrypted() || s.Target.Codec().Encrypted():
		return errs.Invalid("Spec.Source/Target", "encrypted tables cannot be migrated")
	}
	for _, p := range metaProps {
		if _, ok := s.Target.Codec().Property(p); ok {
			return errs.Invalid("Spec.Target", "the new type maps %s, a property the copies reserve", p)
		}
	}
	return nil
}

func (o Options) validate() error {
	if o.Refresh < 0 || o.WriteTimeout < 0 || o.ClockSkew < 0 || o.Concurrency < 0 {
		return errs.Invalid("Options", "durations and Concurrency must not be negative")
	}
	if o.PageSize < 0 || o.PageSize > repo.MaxPageSize {
		return errs.TooLarge("Options.PageSize", "must be between 0 (default) and the service's page size", o.PageSize, repo.MaxPageSize)
	}
	return nil
}

// settle is how long after a transition every process has seen it and every write
// started under the previous stage's rules has ended (see doc.go, "Staleness bound").
func (o Options) settle() time.Duration {
	return o.Refresh + o.WriteTimeout + 3*o.ClockSkew
}

// Migration moves the entities of a source table from their old layout (O) to a new one
// (N): its Writer methods are the application's writes, Get its reads, Plan, Advance and
// Abort its stages, RunJob its background work. Safe for concurrent use.
type Migration[O, N any] struct {
	spec      Spec[O, N]
	opts      Options
	sameTable bool
	src, tgt  *repo.Table[codec.Entity]
	control   *repo.Table[record]
	progress  progressTables
	mu        sync.Mutex
	view      State
	fetched   time.Time
	seams     seams
	// kind is the kind of migration its record names (kindRekey, or kindSchema for a
	// Schema's stages).
	kind string
}

// New declares the migration of spec. It does no I/O: Plan starts it.
//
// Errors: ErrInvalidInput (spec or opts).
func New[O, N any](spec Spec[O, N], opts *Options) (*Migration[O, N], error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	topts := &repo.Options{Retry: o.Retry, Logger: o.Logger}
	m := &Migration[O, N]{spec: spec, opts: o, kind: kindRekey, sameTable: strings.EqualFold(spec.Source.Name(), spec.Target.Name())}
	var err error
	if m.src, err = repo.New[codec.Entity](spec.Service, spec.Source.Name(), topts); err != nil {
		return nil, err
	}
	if m.tgt, err = repo.New[codec.Entity](spec.Service, spec.Target.Name(), topts); err != nil {
		return nil, err
	}
	if m.control, err = repo.New[record](spec.Service, cmp.Or(spec.Control, DefaultControlTable), topts); err != nil {
		return nil, err
	}
	if m.progress, err = newProgressTables(spec.Service, m.control.Name(), topts); err != nil {
		return nil, err
	}
	return m, nil
}
