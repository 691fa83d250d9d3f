package consistency

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Outcome says what a job found and did.
type Outcome string

const (
	// OutcomeMoved: the job copied its data to the target and removed it from the source.
	OutcomeMoved Outcome = "moved"
	// OutcomeAlreadyArchived: an earlier run (or a duplicate message) had done the work;
	// nothing was left to do.
	OutcomeAlreadyArchived Outcome = "already-archived"
	// OutcomeMissing: neither the source nor the target holds the data: nothing to do,
	// and something an operator should look at.
	OutcomeMissing Outcome = "missing"
	// OutcomeRestored: a restore job wrote an archived table back.
	OutcomeRestored Outcome = "restored"
)

// ErrNothingToArchive is the error the worker handlers cancel a message with when a job
// finds OutcomeMissing; the message goes to the poison queue with it.
var ErrNothingToArchive = errors.New("consistency: nothing to archive: neither the source nor the target holds the data")

// Options configures an Archiver. nil means the zero value; zero fields take the defaults.
type Options struct {
	// Retry is the policy of every storage request, and of the restart of a move whose
	// source changed under it. Defaults to retry's defaults.
	Retry retry.Policy
	// Logger receives the jobs' logs and, when Progress is nil, the progress of table
	// jobs: an Info entry "progress" every ProgressEvery entities of a phase, with the
	// fields job, phase, table, generation, entities and total (see Progress). Defaults
	// to zap.NewNop().
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
	// can add messages to the jobs queue can otherwise make the worker move or delete any
	// table with its key: write access to the queue is administrative access. nil allows
	// everything.
	AllowedTablePrefixes []string
	AllowedContainers    []string
	// Progress, if set, receives the reports of every phase of a table job (see
	// Progress), for a progress display, instead of the progress logs: at the start of a
	// phase, after every entity exported, checked or found by the last check, and every
	// chunk restored, and at its end; from the job's goroutines, concurrently for
	// concurrent jobs. It must return quickly. Defaults to nil: progress logs.
	Progress func(Progress)
	// RangeDone, if set, receives what each archive-range delivery that the worker runs
	// did (one page with Queue set, else the whole range from the job's checkpoint),
	// failed ones included (the report counts what was done before the error): for a
	// run's summary per job. job is the delivery's job, its After the checkpoint it
	// started from. It is called from the job's goroutine, concurrently for concurrent
	// jobs, and must return quickly. Defaults to nil. Each delivery is also logged (Info
	// "archive range: page done").
	RangeDone func(job ArchiveRangeJob, rep RangeReport, err error)
	// Companions are, by source table name (case-insensitive), the patterns that keep
	// copies of that table's entities (see Companion): every archive move out of the
	// table removes the copies with the entity. Defaults to none: a move takes the entity
	// alone, and the copies of an indexed entity stay behind.
	Companions map[string][]Companion
	// Queue is the jobs queue the workers run this archiver's jobs from (set it to the
	// queue they read): an archive-range job moves one page per delivery and enqueues its
	// continuation there, and a sharded archive-table job (ArchiveTableJob.Shards > 1)
	// enqueues its shard and combine jobs there. Defaults to nil: an archive-range delivery
	// runs its whole range, and a sharded job fails with ErrInvalidInput (nothing sent).
	Queue *queueworker.Client
}

// Defaults of Options.
const (
	DefaultSealGrace = time.Hour
	DefaultClockSkew = 5 * time.Minute
)

// ErrNotAllowed: a job names a table or container outside the archiver's allowlists
// (Options.AllowedTablePrefixes, Options.AllowedContainers). Nothing was sent.
var ErrNotAllowed = errors.New("consistency: table or container not allowed for this archiver")

// Archiver runs archive jobs against one storage account. It is safe for concurrent use.
type Archiver struct {
	clients *account.Clients
	opts    Options
	topts   *repo.Options
	// step, when set (by tests), is called after each step of a job; an error stops the
	// job there, as a crash would.
	step func(job, step string) error
	// clock, when set (by tests), replaces the package clock for this archiver: a
	// worker whose clock differs from the others'.
	clock func() time.Time
	// recentLimit, when set (by tests), replaces MaxRecentWrites.
	recentLimit int
	// serviceAhead, when set (by tests), is added to the storage service's time as the
	// sweep reads it: time passing at the service (an export that ran for hours).
	serviceAhead time.Duration
	// companionsByTable is Options.Companions keyed by lower-case table name.
	companionsByTable map[string]tableCompanions
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
	for _, p := range o.AllowedTablePrefixes {
		if p == "" {
			return nil, errs.Invalid("Options.AllowedTablePrefixes", "holds an empty prefix (it would allow every table)")
		}
	}
	if o.ProgressEvery < 0 {
		return nil, errs.Invalid("Options.ProgressEvery", "must be positive, got %d", o.ProgressEvery)
	}
	if err := o.Retry.Validate(); err != nil {
		return nil, err
	}
	comp, err := indexCompanions(o.Companions)
	if err != nil {
		return nil, err
	}
	return &Archiver{clients: clients, opts: o, topts: &repo.Options{Retry: o.Retry, Logger: o.Logger}, companionsByTable: comp}, nil
}

// allowed checks tables and a container against the allowlists ("" is skipped).
func (a *Archiver) allowed(table, otherTable, container string) error {
	for _, t := range []string{table, otherTable} {
		if t == "" || a.opts.AllowedTablePrefixes == nil {
			continue
		}
		ok := false
		for _, p := range a.opts.AllowedTablePrefixes {
			if len(t) >= len(p) && strings.EqualFold(t[:len(p)], p) {
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Errorf("%w: table %s (allowed prefixes: %s)", ErrNotAllowed, t, strings.Join(a.opts.AllowedTablePrefixes, ", "))
		}
	}
	if container != "" && a.opts.AllowedContainers != nil && !slices.Contains(a.opts.AllowedContainers, container) {
		return fmt.Errorf("%w: container %s (allowed: %s)", ErrNotAllowed, container, strings.Join(a.opts.AllowedContainers, ", "))
	}
	return nil
}

func (a *Archiver) after(job, step string) error {
	if a.step == nil {
		return nil
	}
	return a.step(job, step)
}

func (a *Archiver) table(name string) (*repo.Table[codec.Entity], error) {
	return repo.New[codec.Entity](a.clients.Tables, name, a.topts)
}

func (a *Archiver) blobs() *azblob.Client { return a.clients.Blobs }

// createContainer creates a container if it does not exist.
func (a *Archiver) createContainer(ctx context.Context, name string) error {
	return retry.Do(ctx, a.opts.Retry, retry.Op{Name: "create container", Resource: name}, func(ctx context.Context, _ int) error {
		_, err := a.blobs().CreateContainer(ctx, name, nil)
		err = errs.Wrap(err, "create container", name, "", "")
		if errors.Is(err, errs.ErrAlreadyExists) {
			return nil
		}
		return err
	})
}

// now is the archivers' clock (tests keep the real one).
var now = time.Now

// now is this archiver's clock.
func (a *Archiver) now() time.Time {
	if a.clock != nil {
		return a.clock()
	}
	return now()
}
