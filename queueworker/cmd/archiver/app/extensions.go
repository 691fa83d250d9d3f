package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/queueerror"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// Index is an index whose maintenance the archiver runs: *secondaryindex.Intra,
// *secondaryindex.Inter, *indexentity.SamePartition and *indexentity.Eventual implement
// it. Register puts its handlers (its backfill, verify and repair jobs, and for Inter
// and Eventual its reconciliation messages) on the worker's registry; the Start methods
// enqueue one job per partition (every partition when none is given) on the index's
// queue. An Index that also lists its partitions (a method Partitions(ctx)
// iter.Seq2[string, error], as the four have) is listed once by `archiver enqueue`
// without -pk, which hands Start the partitions: creating a missing job queue then does
// not make Start list them a second time.
type Index interface {
	Register(r *queueworker.Registry) error
	StartBackfill(ctx context.Context, partitions ...string) error
	StartVerify(ctx context.Context, partitions ...string) error
	StartRepair(ctx context.Context, partitions ...string) error
}

// Env is what the archiver hands a team's extension functions, built from the command
// line: the account's clients, the job queue and the logger. It is not safe for
// concurrent use.
type Env struct {
	// Clients are the storage account's clients (-connection-string-env or -auth).
	Clients *account.Clients
	// Queue is the job queue (-queue). Build an index on it (its queue, or
	// IntraOptions.Queue / SamePartitionOptions.Queue) so that its maintenance jobs and
	// their continuations land where `archiver run` takes them.
	Queue *queueworker.Client
	// Logger is the archiver's logger (stderr, -log-level). Give it to the index's
	// tables (repo.Options.Logger): the verify and repair jobs log their reports on it.
	Logger *zap.Logger

	ext     *Extensions
	indexes map[string]Index
}

// Index returns the index name as Extensions.Indexes builds it on e, built once per
// command: a Companions function calls it to hand the archive the same index the worker
// maintains.
//
// Errors: an *errs.InvalidInputError for a name Extensions.Indexes does not hold, and
// the builder's errors.
func (e *Env) Index(name string) (Index, error) {
	if ix, ok := e.indexes[name]; ok {
		return ix, nil
	}
	build, ok := e.ext.indexes()[name]
	if !ok {
		return nil, e.ext.unknown(name)
	}
	ix, err := build(e)
	if err == nil && isNil(ix) {
		err = usagef("extensions: the builder of index %q returned no index", name)
	}
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", name, err)
	}
	if e.indexes == nil {
		e.indexes = map[string]Index{}
	}
	e.indexes[name] = ix
	return ix, nil
}

// isNil reports whether ix is nil, also a typed nil (a nil *Inter in the interface),
// whose methods would panic.
func isNil(ix any) bool {
	if ix == nil {
		return true
	}
	v := reflect.ValueOf(ix)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// Extensions are what a team's own archiver binary adds to the stock one: its indexes
// (Go code: a type and its key functions, which a generic binary cannot build) and the
// Companions of its archive moves. Pass them to MainWith. nil, or the zero value, is the
// stock archiver.
type Extensions struct {
	// Indexes build the team's indexes by name: the -index of `archiver enqueue
	// backfill|verify|repair`. `archiver run` builds every one and registers its handlers
	// on the worker; `enqueue` builds the one named. A builder must send nothing
	// (constructors of tablepatterns do not): a bad command line is refused before any
	// request. Names are 1 to 63 letters, digits, '.', '_' or '-'. Defaults to none.
	Indexes map[string]func(env *Env) (Index, error)
	// Companions, if set, returns consistency.Options.Companions for the archive jobs of
	// `archiver run`: by source table, the patterns whose copies an archive move takes
	// with the entity (see consistency.Companion). Use env.Index to share the indexes.
	// Defaults to nil: a move takes the entity alone.
	Companions func(env *Env) (map[string][]consistency.Companion, error)
	// Migrations build the team's live migrations (package patterns/migrate: a
	// *migrate.Migration, or a *migrate.Schema with SchemaSpec.Name) by name: the
	// -migration of `archiver enqueue migrate-*` and of `archiver migrate
	// status|advance|abort`. `archiver run` builds every one and registers its range-job
	// handlers; build each with Options.Queue (SchemaOptions.Queue) set to env.Queue so that continuations land where
	// `archiver run` takes them, and Options.Logger to env.Logger so that its progress
	// lines reach the operator. Names follow the grammar of Indexes. Defaults to none.
	Migrations map[string]func(env *Env) (Migration, error)
}

// indexName is the grammar of Extensions.Indexes' names.
var indexName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// validate checks the extensions once, before the command runs.
func (x *Extensions) validate() error {
	if x == nil {
		return nil
	}
	for name, build := range x.Indexes {
		if !indexName.MatchString(name) {
			return usagef("extensions: index name %q: want 1 to 63 letters, digits, '.', '_' or '-'", name)
		}
		if build == nil {
			return usagef("extensions: index %q has no builder", name)
		}
	}
	for name, build := range x.Migrations {
		if !indexName.MatchString(name) {
			return usagef("extensions: migration name %q: want 1 to 63 letters, digits, '.', '_' or '-'", name)
		}
		if build == nil {
			return usagef("extensions: migration %q has no builder", name)
		}
	}
	return nil
}

// names returns the index names, sorted.
func (x *Extensions) names() []string {
	if x == nil {
		return nil
	}
	var out []string
	for name := range x.Indexes {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// unknown is the usage error of an index name that is not registered.
func (x *Extensions) unknown(name string) error {
	names := x.names()
	if len(names) == 0 {
		return usagef("unknown index %q: this archiver has no indexes (a team registers its own with app.MainWith; see 'archiver help')", name)
	}
	return usagef("unknown index %q: this archiver knows %s", name, strings.Join(names, ", "))
}

// usage documents the index commands, and which indexes this binary knows.
func (x *Extensions) usage() string {
	const head = `
Index maintenance (patterns/secondaryindex, patterns/indexentity):
  archiver enqueue backfill|verify|repair [flags] -index NAME [-pk PK ...]
                              one job per partition (each -pk, or every partition of the
                              index's table): backfill writes missing copies (resumable),
                              verify logs the drift it finds ("index verify": counts and
                              the drifted entities' keys; read-only), repair fixes it
                              ("index repair"); run them with 'archiver run'
`
	names := x.names()
	if len(names) == 0 {
		return head + `  This archiver has no indexes: an index is Go code (its entity type and key
  functions), so a team builds its own archiver binary with app.MainWith and
  app.Extensions (see examples/indexarchiver).
`
	}
	return head + "  Indexes of this archiver: " + strings.Join(names, ", ") + "\n"
}

// env returns the Env of the extension functions for e, on the command's client of the
// job queue (one client per command: the archive and the indexes share it).
func (x *Extensions) env(e *env, jobs *queueworker.Client) *Env {
	return &Env{Clients: e.clients, Queue: jobs, Logger: e.logger, ext: x}
}

// setupRun builds, for `archiver run`, the Companions of the archive and a function that
// registers every index's handlers, on jobs, the worker's client of the job queue. It
// sends nothing.
func (x *Extensions) setupRun(e *env, jobs *queueworker.Client) (map[string][]consistency.Companion, func(*queueworker.Registry) error, error) {
	if x == nil {
		return nil, func(*queueworker.Registry) error { return nil }, nil
	}
	ev := x.env(e, jobs)
	var comps map[string][]consistency.Companion
	var err error
	if x.Companions != nil {
		if comps, err = x.Companions(ev); err != nil {
			return nil, nil, fmt.Errorf("extensions: companions: %w", err)
		}
	}
	names := x.names()
	indexes := make([]Index, len(names))
	for i, name := range names {
		if indexes[i], err = ev.Index(name); err != nil {
			return nil, nil, err
		}
	}
	migrations := map[string]Migration{}
	for _, name := range x.migrationNames() {
		if migrations[name], err = ev.migration(name); err != nil {
			return nil, nil, err
		}
	}
	register := func(r *queueworker.Registry) error {
		for i, ix := range indexes {
			if err := ix.Register(r); err != nil {
				return fmt.Errorf("index %s: %w", names[i], err)
			}
		}
		for name, m := range migrations {
			if err := m.Register(r); err != nil {
				return fmt.Errorf("migration %s: %w", name, err)
			}
		}
		return nil
	}
	return comps, register, nil
}

// indexJobs are the index maintenance jobs of `archiver enqueue`.
var indexJobs = []string{"backfill", "verify", "repair"}

// pkList is a repeatable -pk flag.
type pkList []string

func (p *pkList) String() string { return strings.Join(*p, ",") }

func (p *pkList) Set(v string) error {
	if v == "" {
		return usagef("-pk: a PartitionKey is not empty")
	}
	if err := codec.ValidateKey("PartitionKey", v); err != nil {
		return err
	}
	*p = append(*p, v)
	return nil
}

// enqueueIndex runs `archiver enqueue backfill|verify|repair`: the index is looked up
// and every flag checked before any request.
func enqueueIndex(ctx context.Context, job string, args []string, stdout, stderr io.Writer, getenv func(string) string, x *Extensions) error {
	var c common
	var name string
	var pks pkList
	fs := newFlagSet("enqueue " + job)
	c.register(fs)
	fs.StringVar(&name, "index", "", "")
	fs.Var(&pks, "pk", "")
	if err := parse(fs, args); err != nil {
		return err
	}
	if name == "" {
		return usagef("enqueue %s: -index NAME is required", job)
	}
	if _, ok := x.indexes()[name]; !ok {
		return x.unknown(name)
	}
	e, err := setup(c, stderr, getenv)
	if err != nil {
		return err
	}
	qc := e.clients.Queues.NewQueueClient(e.queue)
	jobs, err := queueworker.NewClient(qc, &queueworker.ClientOptions{Logger: e.logger})
	if err != nil {
		return err
	}
	ix, err := x.env(e, jobs).Index(name)
	if err != nil {
		return err
	}
	every := len(pks) == 0
	if l, ok := ix.(partitionLister); ok && every {
		// Listed here, once: the Start below gets the partitions, so that its second
		// run after the queue's creation does not list them again.
		for pk, err := range l.Partitions(ctx) {
			if err != nil {
				return err
			}
			pks = append(pks, pk)
		}
		if len(pks) == 0 {
			fmt.Fprintf(stdout, "enqueued nothing: index %s has no partitions\n", name)
			return nil
		}
	}
	start := func() error {
		switch job {
		case "backfill":
			return ix.StartBackfill(ctx, pks...)
		case "verify":
			return ix.StartVerify(ctx, pks...)
		}
		return ix.StartRepair(ctx, pks...)
	}
	// Start checks every partition against the index before its first request; the queue
	// is created only when the first enqueue finds none, so that a partition the index
	// refuses sends nothing at all. Only the queue's not-found creates it: the index's
	// table missing (its partition listing's 404) is the command's failure.
	err = start()
	if queueMissing(err) {
		if err = createQueue(ctx, qc); err == nil {
			err = start()
		}
	}
	if err != nil {
		return err
	}
	which := "every partition"
	if !every {
		which = fmt.Sprintf("%d partition(s)", len(pks))
	}
	fmt.Fprintf(stdout, "enqueued %s of index %s (%s) on %s\n", job, name, which, e.queue)
	return nil
}

// queueMissing reports whether err says the job queue does not exist (the service's
// QueueNotFound), not that something else the command read is missing.
func queueMissing(err error) bool {
	return errors.Is(err, errs.ErrNotFound) && queueerror.HasCode(err, queueerror.QueueNotFound)
}

// partitionLister is an Index that lists its partitions itself (the four of
// tablepatterns do): `enqueue` without -pk lists them once and hands them to Start.
type partitionLister interface {
	Partitions(ctx context.Context) iter.Seq2[string, error]
}

// indexes returns x.Indexes, nil for nil extensions.
func (x *Extensions) indexes() map[string]func(env *Env) (Index, error) {
	if x == nil {
		return nil
	}
	return x.Indexes
}
