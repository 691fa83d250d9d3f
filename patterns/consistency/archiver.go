package consistency

import (
	"context"
	"errors"

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

// Outcome says what a job found and did.
type Outcome = archive.Outcome

const (
	// OutcomeMoved: the job copied its data to the target and removed it from the source.
	OutcomeMoved = archive.OutcomeMoved
	// OutcomeAlreadyArchived: an earlier run (or a duplicate message) had done the work;
	// nothing was left to do.
	OutcomeAlreadyArchived = archive.OutcomeAlreadyArchived
	// OutcomeMissing: neither the source nor the target holds the data: nothing to do,
	// and something an operator should look at.
	OutcomeMissing = archive.OutcomeMissing
)

// ErrNothingToArchive is the error the worker handlers cancel a message with when a job
// finds OutcomeMissing; the message goes to the poison queue with it.
var ErrNothingToArchive = errors.New("consistency: nothing to archive: neither the source nor the target holds the data")

// Options configures an Archiver. nil means the zero value; zero fields take the defaults.
type Options struct {
	// Retry is the policy of every storage request, and of the restart of a move whose
	// source changed under it. Defaults to retry's defaults.
	Retry retry.Policy
	// Logger receives the jobs' logs. Defaults to zap.NewNop().
	Logger *zap.Logger
	// AllowedTablePrefixes, if set, are the only table name prefixes (case-insensitive,
	// as table names are) that jobs may read, write or delete; AllowedContainers the only
	// containers. A job outside them fails with ErrNotAllowed before any request. Whoever
	// can add messages to the jobs queue can otherwise make the worker move or delete any
	// table with its key: write access to the queue is administrative access. nil allows
	// everything.
	AllowedTablePrefixes []string
	AllowedContainers    []string
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
	// continuation there. Defaults to nil: an archive-range delivery runs its whole range.
	Queue *queueworker.Client
}

// ErrNotAllowed: a job names a table or container outside the archiver's allowlists
// (Options.AllowedTablePrefixes, Options.AllowedContainers). Nothing was sent.
// It is the value tablearchive.ErrNotAllowed holds too.
var ErrNotAllowed = archive.ErrNotAllowed

// Archiver runs archive jobs against one storage account. It is safe for concurrent use.
type Archiver struct {
	clients *account.Clients
	opts    Options
	allow   archive.Allowlist
	topts   *repo.Options
	seams   seams
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
	allow := archive.Allowlist{TablePrefixes: o.AllowedTablePrefixes, Containers: o.AllowedContainers}
	if err := allow.Validate(); err != nil {
		return nil, err
	}
	if err := o.Retry.Validate(); err != nil {
		return nil, err
	}
	comp, err := indexCompanions(o.Companions)
	if err != nil {
		return nil, err
	}
	return &Archiver{clients: clients, opts: o, allow: allow, topts: &repo.Options{Retry: o.Retry, Logger: o.Logger}, companionsByTable: comp}, nil
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

// tableFolder is the folder of a table's entity copies: its name in lower case.
func tableFolder(table string) string { return archive.TableFolder(table) }
