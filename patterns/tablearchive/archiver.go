package tablearchive

import (
	"context"
	"errors"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/internal/archive"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Outcome says what a table job found and did.
type Outcome = archive.Outcome

const (
	// OutcomeMoved: the job exported the table and deleted it.
	OutcomeMoved = archive.OutcomeMoved
	// OutcomeAlreadyArchived: an earlier run (or a duplicate message) had done the work;
	// nothing was left to do.
	OutcomeAlreadyArchived = archive.OutcomeAlreadyArchived
	// OutcomeMissing: neither the table nor an export of it exists: nothing to do, and
	// something an operator should look at.
	OutcomeMissing = archive.OutcomeMissing
	// OutcomeRestored: a restore job wrote an archived table back.
	OutcomeRestored Outcome = "restored"
)

// ErrNothingToArchive is the error the worker handlers cancel a message with when a job
// finds OutcomeMissing; the message goes to the poison queue with it.
var ErrNothingToArchive = errors.New("tablearchive: nothing to archive: neither the table nor an export of it exists")

// ErrNotAllowed: a job names a table or container outside the archiver's allowlists
// (Options.AllowedTablePrefixes, Options.AllowedContainers). Nothing was sent. It is the
// value consistency.ErrNotAllowed holds too.
var ErrNotAllowed = archive.ErrNotAllowed

// Options configures an Archiver. nil means the zero value; zero fields take the defaults.
type Options struct {
	// Retry is the policy of every storage request. Defaults to retry's defaults.
	Retry retry.Policy
	// Logger receives the jobs' logs and, when Progress is nil, their progress: an Info
	// entry "progress" every ProgressEvery entities of a phase, with the fields job,
	// phase, table, generation, entities and total (see Progress). Defaults to
	// zap.NewNop().
	Logger *zap.Logger
	// ProgressEvery is how many entities a phase of a table job handles between progress
	// logs. Defaults to 10,000.
	ProgressEvery int
	// SealGrace is how long after its period ended a periodtable period table becomes
	// archivable (sealed). Writers through periodtable must refuse writes to such
	// periods: set their periodtable.Options.SealAfter to SealGrace or less. Defaults to
	// DefaultSealGrace (1 hour).
	SealGrace time.Duration
	// ClockSkew is the margin allowed between the archiver's clock, the writers' clocks
	// and the service's Timestamps: it is added to SealGrace, and a table export counts
	// an entity written ClockSkew before the export began as a change. Defaults to
	// DefaultClockSkew (5 minutes); -1 means none.
	ClockSkew time.Duration
	// AllowedTablePrefixes, if set, are the only table name prefixes (case-insensitive,
	// as table names are) that jobs may read, write or delete; AllowedContainers the only
	// containers. A job outside them fails with ErrNotAllowed before any request. Whoever
	// can add messages to the jobs queue can otherwise make the worker export and delete
	// any table with its key: write access to the queue is administrative access. nil
	// allows everything.
	AllowedTablePrefixes []string
	AllowedContainers    []string
	// Progress, if set, receives the reports of every phase of a table job (see
	// Progress), for a progress display, instead of the progress logs: at the start of a
	// phase, after every entity exported, checked or found by the last check, and every
	// chunk restored, and at its end; from the job's goroutines, concurrently for
	// concurrent jobs. It must return quickly. Defaults to nil: progress logs.
	Progress func(Progress)
	// Queue is the jobs queue the workers run this archiver's jobs from (set it to the
	// queue they read): a sharded archive-table job (ArchiveTableJob.Shards > 1) enqueues
	// its shard and combine jobs there. Defaults to nil: a sharded job fails with
	// ErrInvalidInput (nothing sent).
	Queue *queueworker.Client
}

// Defaults of Options.
const (
	DefaultSealGrace = time.Hour
	DefaultClockSkew = 5 * time.Minute
)

// Archiver runs table jobs against one storage account. It is safe for concurrent use.
type Archiver struct {
	clients *account.Clients
	opts    Options
	allow   archive.Allowlist
	topts   *repo.Options
	seams   seams
}

// seams is what tests set on an Archiver; the zero value is production.
type seams struct {
	// step, when set, is called after each step of a job; an error stops the job there,
	// as a crash would.
	step func(job, step string) error
	// clock replaces the package clock for this archiver: a worker whose clock differs
	// from the others'.
	clock func() time.Time
	// recentLimit replaces MaxRecentWrites.
	recentLimit int
	// serviceAhead is added to the storage service's time as the sweep reads it: time
	// passing at the service (an export that ran for hours).
	serviceAhead time.Duration
	// restoreWindow replaces restoreWindow: a test's windows of a few entities.
	restoreWindow int
}

// New returns an Archiver over clients (from account.NewClients). It sends nothing.
//
// Errors: ErrInvalidInput for nil clients or invalid options.
func New(clients *account.Clients, opts *Options) (*Archiver, error) {
	if clients == nil || clients.Tables == nil || clients.Blobs == nil {
		return nil, errs.Invalid("clients", "need the table and blob clients (account.NewClients)")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Retry.Logger == nil {
		o.Retry.Logger = o.Logger
	}
	if o.ProgressEvery == 0 {
		o.ProgressEvery = 10000
	}
	if o.SealGrace == 0 {
		o.SealGrace = DefaultSealGrace
	}
	switch {
	case o.ClockSkew == 0:
		o.ClockSkew = DefaultClockSkew
	case o.ClockSkew == -1:
		o.ClockSkew = 0
	case o.ClockSkew < 0:
		return nil, errs.Invalid("Options.ClockSkew", "must be positive, 0 (default) or -1 (none), got %v", o.ClockSkew)
	}
	if o.SealGrace < 0 {
		return nil, errs.Invalid("Options.SealGrace", "must not be negative, got %v", o.SealGrace)
	}
	allow := archive.Allowlist{TablePrefixes: o.AllowedTablePrefixes, Containers: o.AllowedContainers}
	if err := allow.Validate(); err != nil {
		return nil, err
	}
	if o.ProgressEvery < 0 {
		return nil, errs.Invalid("Options.ProgressEvery", "must be positive, got %d", o.ProgressEvery)
	}
	if err := o.Retry.Validate(); err != nil {
		return nil, err
	}
	return &Archiver{clients: clients, opts: o, allow: allow, topts: &repo.Options{Retry: o.Retry, Logger: o.Logger}}, nil
}

// allowed checks tables and a container against the allowlists ("" is skipped).
func (a *Archiver) allowed(table, otherTable, container string) error {
	return a.allow.Check(table, otherTable, container)
}

func (a *Archiver) after(job, step string) error {
	if a.seams.step == nil {
		return nil
	}
	return a.seams.step(job, step)
}

func (a *Archiver) table(name string) (*repo.Table[codec.Entity], error) {
	return repo.New[codec.Entity](a.clients.Tables, name, a.topts)
}

func (a *Archiver) blobs() *azblob.Client { return a.clients.Blobs }

// createContainer creates a container if it does not exist.
func (a *Archiver) createContainer(ctx context.Context, name string) error {
	return archive.CreateContainer(ctx, a.blobs(), a.opts.Retry, name)
}

// now is the archivers' clock (tests keep the real one).
var now = time.Now

// now is this archiver's clock.
func (a *Archiver) now() time.Time {
	if a.seams.clock != nil {
		return a.seams.clock()
	}
	return now()
}

// tableFolder is the canonical folder of a table's archives: its name in lower case.
func tableFolder(table string) string { return archive.TableFolder(table) }

func ptrTo[T any](v T) *T { return &v }
