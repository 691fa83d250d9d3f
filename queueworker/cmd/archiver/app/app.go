// Package app is the archiver command (queueworker/cmd/archiver), as a function that
// programs and tests can call: the demo runs the archiver through it.
//
// It is also the archiver as a library for a team's own binary: MainWith takes
// Extensions, the team's indexes (an index is Go code, its entity type and key functions,
// which the stock binary cannot build) and the Companions of its archive moves. Each index
// is built on an Env (the account's clients, the job queue, the logger); `run` registers
// its handlers on the worker, and `enqueue backfill|verify|repair -index NAME [-pk PK]`
// enqueues its maintenance jobs, one per partition. A verify job logs its report as one
// line of counts and keys; a repair job runs Repair and logs what it fixed. The stock
// binary (Main) has no extensions, and its help says so. See examples/indexarchiver.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/patterns/periodtable"
	"github.com/tablepatterns/tablepatterns/patterns/tablearchive"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitUsage  = 2
	// ExitPoisoned is run -drain's exit when the queue was drained but at least one job it
	// ran went to the poison queue.
	ExitPoisoned = 3
)

// DefaultQueue is the queue of archive jobs.
const DefaultQueue = "archive-jobs"

const usage = `archiver runs the archive jobs of tablepatterns (patterns/consistency) from a queue.

Usage:
  archiver run [flags]                  run the worker until SIGINT/SIGTERM (or -drain)
  archiver enqueue archive-entity [flags] -source T -pk PK -rk RK (-target-table T | -target-container C)
                                        -rk is required: the empty RowKey is -rk ''
  archiver enqueue archive-table  [flags] -table T -container C (-period-prefix P -period daily | -sealed) [-keep-table] [-shards N]
                                        only sealed tables are archived: a periodtable period that
                                        ended more than -seal-grace ago, or -sealed: YOU GUARANTEE
                                        THAT NOTHING WRITES THE TABLE ANY MORE
                                        -shards N (2 to 64) splits the export by PartitionKey ranges
                                        into N shard jobs that every archiver on the queue runs in
                                        parallel; a combine job checks them all and deletes the table
  archiver enqueue restore-table  [flags] -table T -container C [-target T] [-generation latest|all|NAME]
                                        a sharded generation is restored by one job, its shards
                                        verified first, then written 4 at a time
  archiver enqueue archive-range  [flags] -source T (-pk PK [-rk-from A] [-rk-to B] | -pk-from A -pk-to B)
                                        [-where PROP:OP:TYPE:VALUE ...] (-target-table T | -target-container C)
                                        move every entity of a partition, a key range (from inclusive,
                                        to exclusive) and/or a filter, 100 per transaction, one page
                                        of 1,000 per delivery; -where repeats (all must hold); OP is
                                        eq ne gt ge lt le, TYPE an EDM type (empty: Edm.String),
                                        e.g. -where Age:lt:Edm.Int32:30; Timestamp (the last write)
                                        takes Edm.DateTime only, e.g. not written since 2025:
                                        -where Timestamp:lt:Edm.DateTime:2025-01-01T00:00:00Z
  archiver enqueue archive-periods [flags] -prefix P -period daily -before 2024-06-01 -container C [-retention 720h] [-dry-run]
                                        one archive-table job per period table (patterns/periodtable)
                                        whose period ended at or before -before (hot/cold data);
                                        -before must be at least -seal-grace + 5m in the past
  archiver sweep [flags] -table T -container C [-older-than 24h] [-dry-run]
                                        delete the data blobs of T's exports that have no
                                        manifest (an archiver killed mid-export), older than
                                        -older-than (at least 1h)
  archiver poison list [flags] [-n 32]  show poison messages with their last error
  archiver poison requeue [flags] [-max 0]
                                        move poison messages back to the queue (0: all that are
                                        there when it starts)

Every command takes:
  -queue NAME                 the job queue (default archive-jobs; poison: NAME-poison)
  -connection-string-env VAR  the variable holding the storage connection string
                              (default AZURE_STORAGE_CONNECTION_STRING; unset: local Azurite
                              on 127.0.0.1:10000-10002)
  -log-level LEVEL            debug, info, warn or error (default info)

enqueue archive-table, enqueue archive-periods and run take:
  -seal-grace DURATION        how long after its end a period table is sealed (default 1h);
                              writers must use periodtable.Options.SealAfter <= it

run also takes:
  -allow-tables P1,P2         table name prefixes jobs may touch (required, or -allow-any)
  -allow-containers C1,C2     containers jobs may touch (required, or -allow-any)
  -allow-any                  let jobs touch any table and container (write access to the
                              queue is then administrative access)
                              write access to the job queue is administrative access: without
                              allowlists, whoever can enqueue can move or delete any table
  -drain                      exit once the queue is empty and no job runs (exit 3 if a
                              job it ran went to the poison queue)
  -concurrency N              jobs at once (default 16)
  -visibility DURATION        message lock, renewed at half (default 5m)
  -max-dequeue N              deliveries before a failing job goes to the poison queue (default 5)
  -shutdown-timeout DURATION  how long in-flight jobs may finish on shutdown (default 30s)

Exit codes:
  0  done
  1  failed
  2  bad command line, configuration or job (checked before any request)
  3  run -drain: drained, but a job it ran went to the poison queue (see poison list)
`

// list splits a comma-separated flag value; "" is nil (no list).
func list(v string) []string {
	if v == "" {
		return nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// usageError is a bad command line or configuration.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// poisonedError is a drain that ended with jobs in the poison queue (ExitPoisoned).
type poisonedError struct {
	poisoned int64
	queue    string
}

func (e *poisonedError) Error() string {
	return fmt.Sprintf("drained, but %d job(s) went to the poison queue %s%s (archiver poison list)", e.poisoned, e.queue, queueworker.PoisonSuffix)
}

// enqueueJobs lists the jobs enqueue takes, for its usage errors.
func enqueueJobs(ext *Extensions) string {
	jobs := []string{consistency.KindArchiveEntity, tablearchive.KindArchiveTable, tablearchive.KindRestoreTable, consistency.KindArchiveRange, "archive-periods"}
	if ext != nil && len(ext.Indexes) > 0 {
		jobs = append(jobs, indexJobs...)
	}
	if ext != nil && len(ext.Migrations) > 0 {
		jobs = append(jobs, migrationJobs...)
	}
	return strings.Join(jobs[:len(jobs)-1], ", ") + " or " + jobs[len(jobs)-1]
}

// Main runs the archiver with args (without the program name) and returns its exit code.
// getenv reads the environment (os.Getenv in the binary). It is MainWith without
// extensions: the stock archiver.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return MainWith(ctx, args, stdout, stderr, getenv, nil)
}

// MainWith is Main for a team's own archiver binary: ext adds the team's indexes (their
// maintenance jobs, `archiver enqueue backfill|verify|repair -index NAME`) and the
// Companions of its archive moves. nil ext is the stock archiver.
func MainWith(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string, ext *Extensions) int {
	err := ext.validate()
	if err == nil {
		err = run(ctx, args, stdout, stderr, getenv, ext)
	}
	var ue *usageError
	var pe *poisonedError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage+authUsage+telemetryUsage)
		fmt.Fprint(stdout, ext.usage()+ext.migrationUsage())
		return ExitOK
	case errors.As(err, &pe):
		fmt.Fprintf(stderr, "archiver: %s\n", pe)
		return ExitPoisoned
	case errors.As(err, &ue) || errors.Is(err, errs.ErrInvalidInput):
		fmt.Fprintf(stderr, "archiver: %s\n\nRun 'archiver help' for usage.\n", errs.Redact(err))
		return ExitUsage
	default:
		fmt.Fprintf(stderr, "archiver: %s\n", errs.Redact(err))
		return ExitFailed
	}
}

// common are the flags every command takes.
type common struct {
	queue    string
	connEnv  string
	logLevel string
	auth     authFlags
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.queue, "queue", DefaultQueue, "")
	fs.StringVar(&c.connEnv, "connection-string-env", "AZURE_STORAGE_CONNECTION_STRING", "")
	fs.StringVar(&c.logLevel, "log-level", "info", "")
	c.auth.register(fs)
}

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by Main
	return fs
}

// flagGiven reports whether the command line set the flag name.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%s: %v", fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string, ext *Extensions) error {
	if len(args) == 0 {
		return usagef("no command")
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		return flag.ErrHelp
	case "run":
		return runWorker(ctx, args[1:], stdout, stderr, getenv, ext)
	case "enqueue":
		if len(args) < 2 {
			return usagef("enqueue: which job? %s", enqueueJobs(ext))
		}
		if slices.Contains(indexJobs, args[1]) {
			return enqueueIndex(ctx, args[1], args[2:], stdout, stderr, getenv, ext)
		}
		if slices.Contains(migrationJobs, args[1]) {
			return enqueueMigration(ctx, args[1], args[2:], stdout, stderr, getenv, ext)
		}
		if args[1] == "archive-periods" {
			return enqueuePeriods(ctx, args[2:], stdout, stderr, getenv)
		}
		if !slices.Contains([]string{consistency.KindArchiveEntity, tablearchive.KindArchiveTable, tablearchive.KindRestoreTable, consistency.KindArchiveRange}, args[1]) {
			return usagef("enqueue: unknown job %q: %s", args[1], enqueueJobs(ext))
		}
		return enqueue(ctx, args[1], args[2:], stdout, stderr, getenv)
	case "sweep":
		return sweep(ctx, args[1:], stdout, stderr, getenv)
	case "migrate":
		if len(args) < 2 {
			return usagef("migrate: status, advance or abort?")
		}
		return migrateCommand(ctx, args[1], args[2:], stdout, stderr, getenv, ext)
	case "poison":
		if len(args) < 2 {
			return usagef("poison: list or requeue?")
		}
		return poison(ctx, args[1], args[2:], stdout, stderr, getenv)
	}
	return usagef("unknown command %q", args[0])
}

// env is what every command builds from the common flags.
type env struct {
	clients *account.Clients
	logger  *zap.Logger
	queue   string
}

func setup(c common, stderr io.Writer, getenv func(string) string) (*env, error) {
	var level zapcore.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, usagef("-log-level %q: want debug, info, warn or error", c.logLevel)
	}
	if err := validQueueName(c.queue); err != nil {
		return nil, err
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	logger := zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(zapcore.AddSync(stderr)), level))
	clients, err := c.auth.clients(c.connEnv, getenv, logger)
	if err != nil {
		return nil, err
	}
	return &env{clients: clients, logger: logger, queue: c.queue}, nil
}

// validQueueName checks a queue name, and that its poison queue's name is valid too.
func validQueueName(name string) error {
	if err := codec.ValidateQueueName(name); err != nil {
		return err
	}
	if err := codec.ValidateQueueName(name + queueworker.PoisonSuffix); err != nil {
		return usagef("-queue %q: too long for its poison queue %q (63 characters at most)", name, name+queueworker.PoisonSuffix)
	}
	return nil
}

func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string, ext *Extensions) error {
	var c common
	var drain bool
	var concurrency, maxDequeue int
	var visibility, shutdown, grace time.Duration
	var allowTables, allowContainers string
	var allowAny bool
	var obs observeFlags
	fs := newFlagSet("run")
	c.register(fs)
	obs.register(fs)
	fs.DurationVar(&grace, "seal-grace", tablearchive.DefaultSealGrace, "")
	fs.StringVar(&allowTables, "allow-tables", "", "")
	fs.StringVar(&allowContainers, "allow-containers", "", "")
	fs.BoolVar(&allowAny, "allow-any", false, "")
	fs.BoolVar(&drain, "drain", false, "")
	fs.IntVar(&concurrency, "concurrency", 16, "")
	fs.IntVar(&maxDequeue, "max-dequeue", queueworker.DefaultMaxDequeueCount, "")
	fs.DurationVar(&visibility, "visibility", 5*time.Minute, "")
	fs.DurationVar(&shutdown, "shutdown-timeout", queueworker.DefaultShutdownTimeout, "")
	if err := parse(fs, args); err != nil {
		return err
	}
	if concurrency < 1 || maxDequeue < 1 || visibility < time.Second || shutdown <= 0 || grace <= 0 {
		return usagef("run: -concurrency and -max-dequeue must be at least 1, -visibility at least 1s, -shutdown-timeout and -seal-grace positive")
	}
	tables, containers := list(allowTables), list(allowContainers)
	if !allowAny && (len(tables) == 0 || len(containers) == 0) {
		// Least privilege by default: whoever can add to the queue steers what the worker
		// moves and deletes with the account's key.
		return usagef("run: name the tables and containers jobs may touch (-allow-tables PREFIX1,PREFIX2 and -allow-containers C1,C2), or pass -allow-any: anyone who can write to the jobs queue can then make the worker move or delete any table")
	}
	if allowAny && (len(tables) != 0 || len(containers) != 0) {
		return usagef("run: -allow-any and -allow-tables/-allow-containers exclude each other")
	}
	if err := obs.validate(); err != nil {
		return err
	}
	e, err := setup(c, stderr, getenv)
	if err != nil {
		return err
	}
	defer e.logger.Sync()
	stopTelemetry, err := obs.start(ctx, e.logger)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	q := e.clients.Queues.NewQueueClient(e.queue)
	// Range continuations, the shard and combine jobs of sharded archive-table jobs, and
	// the indexes' maintenance jobs are enqueued on the queue this worker reads.
	jobs, err := queueworker.NewClient(q, &queueworker.ClientOptions{Logger: e.logger})
	if err != nil {
		return err
	}
	companions, registerIndexes, err := ext.setupRun(e, jobs)
	if err != nil {
		return err
	}
	var ranges rangeSummary
	a, err := consistency.New(e.clients, &consistency.Options{Logger: e.logger,
		AllowedTablePrefixes: tables, AllowedContainers: containers,
		Companions: companions, Queue: jobs, RangeDone: ranges.add})
	if err != nil {
		return err
	}
	ta, err := tablearchive.New(e.clients, &tablearchive.Options{Logger: e.logger, SealGrace: grace,
		AllowedTablePrefixes: tables, AllowedContainers: containers, Progress: obs.progress.reporter(stderr, e.logger),
		Queue: jobs})
	if err != nil {
		return err
	}
	if allowAny {
		e.logger.Warn("-allow-any: any job on the queue can move or delete any table or container this account's key reaches; write access to the queue is administrative access")
	}
	reg := queueworker.NewRegistry()
	if err := a.Register(reg); err != nil {
		return err
	}
	if err := ta.Register(reg); err != nil {
		return err
	}
	if err := registerIndexes(reg); err != nil {
		return err
	}
	if err := createQueue(ctx, q); err != nil {
		return err
	}
	w, err := queueworker.New(queueworker.Config{
		Queue: q, Service: e.clients.Queues, Registry: reg,
		Concurrency: concurrency, BatchSize: min(concurrency, queueworker.MaxBatchSize),
		VisibilityTimeout: visibility, MaxDequeueCount: maxDequeue, ShutdownTimeout: shutdown,
		Logger: e.logger,
	})
	if err != nil {
		return err
	}
	e.logger.Info("archiver started", zap.String("queue", e.queue), zap.Int("concurrency", concurrency), zap.Bool("drain", drain))
	// Say when a stop is requested (SIGINT/SIGTERM cancel ctx), as it arrives.
	stopped, logged := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(logged)
		select {
		case <-ctx.Done():
		case <-stopped:
			if ctx.Err() == nil {
				return
			}
		}
		e.logger.Info("stop requested (signal): no new jobs; running jobs may finish", zap.Duration("shutdownTimeout", shutdown))
	}()
	if drain {
		err = w.Drain(ctx)
	} else {
		err = w.Run(ctx)
	}
	close(stopped)
	<-logged
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		err = nil // SIGINT/SIGTERM: a graceful stop, with or without -drain
	}
	s := w.Stats()
	e.logger.Info("archiver stopped", zap.Int64("processed", s.Processed), zap.Int64("failed", s.Failed),
		zap.Int64("poisoned", s.Poisoned), zap.Int64("retried", s.Retried))
	fmt.Fprintf(stdout, "processed %d, failed %d, poisoned %d\n", s.Processed, s.Failed, s.Poisoned)
	ranges.print(stdout)
	if err == nil && drain && s.Poisoned > 0 {
		return &poisonedError{poisoned: s.Poisoned, queue: e.queue}
	}
	return err
}

// createQueue creates the job queue if it does not exist.
func createQueue(ctx context.Context, q *azqueue.QueueClient) error {
	_, err := q.Create(ctx, nil)
	err = errs.Wrap(err, "create queue", "", "", "")
	if err == nil || errors.Is(err, errs.ErrAlreadyExists) {
		return nil
	}
	return err
}

func enqueue(ctx context.Context, kind string, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	var c common
	fs := newFlagSet("enqueue " + kind)
	c.register(fs)
	var entity consistency.ArchiveEntityJob
	var table tablearchive.ArchiveTableJob
	var restore tablearchive.RestoreTableJob
	var rng consistency.ArchiveRangeJob
	var grace time.Duration
	switch kind {
	case consistency.KindArchiveEntity:
		fs.StringVar(&entity.Source, "source", "", "")
		fs.StringVar(&entity.PartitionKey, "pk", "", "")
		fs.StringVar(&entity.RowKey, "rk", "", "")
		fs.StringVar(&entity.TargetTable, "target-table", "", "")
		fs.StringVar(&entity.TargetContainer, "target-container", "", "")
	case tablearchive.KindArchiveTable:
		fs.StringVar(&table.Table, "table", "", "")
		fs.StringVar(&table.Container, "container", "", "")
		fs.BoolVar(&table.KeepTable, "keep-table", false, "")
		fs.BoolVar(&table.Sealed, "sealed", false, "")
		fs.StringVar(&table.PeriodPrefix, "period-prefix", "", "")
		fs.StringVar(&table.Period, "period", "", "")
		fs.IntVar(&table.Shards, "shards", 0, "")
		fs.DurationVar(&grace, "seal-grace", tablearchive.DefaultSealGrace, "")
	case tablearchive.KindRestoreTable:
		fs.StringVar(&restore.Table, "table", "", "")
		fs.StringVar(&restore.Container, "container", "", "")
		fs.StringVar(&restore.Target, "target", "", "")
		fs.StringVar(&restore.Generation, "generation", "latest", "")
	case consistency.KindArchiveRange:
		fs.StringVar(&rng.Source, "source", "", "")
		fs.StringVar(&rng.PartitionKey, "pk", "", "")
		fs.StringVar(&rng.RowKeyFrom, "rk-from", "", "")
		fs.StringVar(&rng.RowKeyTo, "rk-to", "", "")
		fs.StringVar(&rng.PartitionKeyFrom, "pk-from", "", "")
		fs.StringVar(&rng.PartitionKeyTo, "pk-to", "", "")
		fs.StringVar(&rng.TargetTable, "target-table", "", "")
		fs.StringVar(&rng.TargetContainer, "target-container", "", "")
		fs.Func("where", "", func(v string) error {
			f := strings.SplitN(v, ":", 4)
			if len(f) != 4 {
				return fmt.Errorf("%q: want PROPERTY:OP:TYPE:VALUE (TYPE may be empty: Edm.String)", v)
			}
			rng.Where = append(rng.Where, filter.Condition{Property: f[0], Op: f[1], Type: f[2], Value: f[3]})
			return nil
		})
	default:
		return usagef("enqueue: unknown job %q: %s", kind, enqueueJobs(nil))
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if kind == consistency.KindArchiveEntity && !flagGiven(fs, "rk") {
		// An empty RowKey is a valid key, so a forgotten -rk would enqueue a job for an
		// entity nobody meant.
		return usagef("enqueue archive-entity: -rk is required (the empty RowKey is -rk '')")
	}
	if kind == tablearchive.KindArchiveTable && table.Shards < 2 && flagGiven(fs, "shards") {
		// The library takes 0 or 1 as "unsharded"; on the command line a -shards that
		// splits nothing is a mistake (omit it for an unsharded export).
		return usagef("enqueue archive-table: -shards %d: want 2 to %d (omit -shards for an unsharded export)", table.Shards, tablearchive.MaxShards)
	}
	if restore.Generation == "latest" {
		restore.Generation = tablearchive.GenerationLatest
	}
	e, err := setup(c, stderr, getenv)
	if err != nil {
		return err
	}
	// Check the job before any request: a bad job is a usage error (exit 2), even when
	// the storage cannot be reached.
	switch kind {
	case consistency.KindArchiveEntity:
		err = entity.Validate()
	case consistency.KindArchiveRange:
		err = rng.Validate()
	case tablearchive.KindArchiveTable:
		var a *tablearchive.Archiver
		if a, err = tablearchive.New(e.clients, &tablearchive.Options{SealGrace: grace}); err == nil {
			err = a.CheckSealed(table)
		}
	default:
		err = restore.Validate()
	}
	if err != nil {
		return err
	}
	q := e.clients.Queues.NewQueueClient(e.queue)
	if err := createQueue(ctx, q); err != nil {
		return err
	}
	client, err := queueworker.NewClient(q, &queueworker.ClientOptions{Logger: e.logger})
	if err != nil {
		return err
	}
	switch kind {
	case consistency.KindArchiveEntity:
		err = consistency.EnqueueArchiveEntity(ctx, client, entity)
	case consistency.KindArchiveRange:
		err = consistency.EnqueueArchiveRange(ctx, client, rng)
	case tablearchive.KindArchiveTable:
		err = tablearchive.EnqueueArchiveTable(ctx, client, table)
	default:
		err = tablearchive.EnqueueRestoreTable(ctx, client, restore)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "enqueued %s on %s\n", kind, e.queue)
	return nil
}

// periods are the period names archive-periods accepts.
var periods = map[string]periodtable.Period{
	"hourly": periodtable.Hourly, "daily": periodtable.Daily, "weekly": periodtable.Weekly, "monthly": periodtable.Monthly,
}

// enqueuePeriods enqueues an archive-table job for every table of a period scheme whose
// period ended at or before a cutoff: Tablestore's hot/cold separation (Tablestore's primary key design guide) with
// the per-period tables of the design guide's high-volume delete pattern.
func enqueuePeriods(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	var c common
	var prefix, period, before, container string
	var grace, retention time.Duration
	var dryRun bool
	fs := newFlagSet("enqueue archive-periods")
	c.register(fs)
	fs.DurationVar(&grace, "seal-grace", tablearchive.DefaultSealGrace, "")
	fs.DurationVar(&retention, "retention", 0, "")
	fs.BoolVar(&dryRun, "dry-run", false, "")
	fs.StringVar(&prefix, "prefix", "", "")
	fs.StringVar(&period, "period", "", "")
	fs.StringVar(&before, "before", "", "")
	fs.StringVar(&container, "container", "", "")
	if err := parse(fs, args); err != nil {
		return err
	}
	p, ok := periods[period]
	if !ok {
		return usagef("enqueue archive-periods: -period %q: want hourly, daily, weekly or monthly", period)
	}
	cutoff, err := time.Parse("2006-01-02", before)
	if err != nil {
		if cutoff, err = time.Parse(time.RFC3339, before); err != nil {
			return usagef("enqueue archive-periods: -before %q: want a date (2024-06-01) or an RFC 3339 time", before)
		}
	}
	scheme := periodtable.Scheme{Prefix: prefix, Period: p}
	if err := scheme.Validate(); err != nil {
		return err
	}
	if err := codec.ValidateContainerName(container); err != nil {
		return err
	}
	// The cutoff must leave every period it selects sealed: ended more than the grace
	// (and the clock skew) ago. A cutoff in the future would select today's table.
	if grace <= 0 {
		return usagef("enqueue archive-periods: -seal-grace must be positive")
	}
	if retention < 0 {
		return usagef("enqueue archive-periods: -retention must not be negative")
	}
	if hot := time.Now().Add(-retention); retention > 0 && cutoff.After(hot) {
		// The hot tables the applications still read (periodtable's Options.Retention).
		return usagef("enqueue archive-periods: -before %s is inside the retention (-retention %v): periods that ended after %s are still hot",
			cutoff.UTC().Format(time.RFC3339), retention, hot.UTC().Format(time.RFC3339))
	}
	if latest := time.Now().Add(-grace - tablearchive.DefaultClockSkew); cutoff.After(latest) {
		return usagef("enqueue archive-periods: -before %s is too recent: periods that ended after %s may still be written (-seal-grace %v plus a clock skew of %v)",
			cutoff.UTC().Format(time.RFC3339), latest.UTC().Format(time.RFC3339), grace, tablearchive.DefaultClockSkew)
	}
	e, err := setup(c, stderr, getenv)
	if err != nil {
		return err
	}
	tables, err := periodtable.New[codec.Entity](e.clients.Tables, scheme, "Timestamp", nil)
	if err != nil {
		return err
	}
	old, err := tables.List(ctx, &periodtable.ListOptions{EndBefore: cutoff})
	if err != nil {
		return err
	}
	if dryRun {
		for _, t := range old {
			fmt.Fprintf(stdout, "would enqueue archive-table %s (%s to %s)\n", t.Name, t.Start.Format(time.RFC3339), t.End.Format(time.RFC3339))
		}
		fmt.Fprintf(stdout, "%d period table(s) of %s ended at or before %s (dry run: nothing enqueued)\n", len(old), prefix, cutoff.Format(time.RFC3339))
		return nil
	}
	q := e.clients.Queues.NewQueueClient(e.queue)
	if err := createQueue(ctx, q); err != nil {
		return err
	}
	client, err := queueworker.NewClient(q, &queueworker.ClientOptions{Logger: e.logger})
	if err != nil {
		return err
	}
	for _, t := range old {
		job := tablearchive.ArchiveTableJob{Table: t.Name, Container: container, PeriodPrefix: prefix, Period: p.String()}
		if err := tablearchive.EnqueueArchiveTable(ctx, client, job); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "enqueued archive-table %s (%s to %s) on %s\n", t.Name,
			t.Start.Format(time.RFC3339), t.End.Format(time.RFC3339), e.queue)
	}
	fmt.Fprintf(stdout, "%d period table(s) of %s ended at or before %s\n", len(old), prefix, cutoff.Format(time.RFC3339))
	return nil
}

func poison(ctx context.Context, sub string, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	var c common
	fs := newFlagSet("poison " + sub)
	c.register(fs)
	var n, max int
	switch sub {
	case "list":
		fs.IntVar(&n, "n", 32, "")
	case "requeue":
		fs.IntVar(&max, "max", 0, "")
	default:
		return usagef("poison: unknown command %q: list or requeue", sub)
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if sub == "list" && (n < 1 || n > 32) {
		return usagef("poison list: -n is 1 to 32 (the service's peek limit)")
	}
	if max < 0 {
		return usagef("poison requeue: -max is 0 (all) or more")
	}
	e, err := setup(c, stderr, getenv)
	if err != nil {
		return err
	}
	pq := e.clients.Queues.NewQueueClient(e.queue + queueworker.PoisonSuffix)
	if sub == "list" {
		msgs, err := queueworker.PeekPoison(ctx, pq, n)
		if errors.Is(err, errs.ErrNotFound) {
			msgs, err = nil, nil // no poison queue yet: nothing was poisoned
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d poison message(s) on %s%s\n", len(msgs), e.queue, queueworker.PoisonSuffix)
		for _, m := range msgs {
			if m.Kind == "" {
				// Not an envelope (malformed, or forged): show its text as it was, quoted.
				fmt.Fprintf(stdout, "- (malformed) poisoned=%s deliveries=%d\n  text: %q\n  error: %s\n",
					m.PoisonedAt.Format(time.RFC3339), m.OriginalDequeueCount, m.Original, terminalSafe(m.Error))
				continue
			}
			// Kind, id, payload and error are whoever-wrote-the-queue's text: no control
			// character of theirs reaches the operator's terminal.
			fmt.Fprintf(stdout, "- %s id=%s poisoned=%s deliveries=%d\n  payload: %s\n  error: %s\n",
				terminalSafe(m.Kind), terminalSafe(m.ID), m.PoisonedAt.Format(time.RFC3339), m.OriginalDequeueCount,
				terminalSafe(string(m.Payload)), terminalSafe(m.Error))
		}
		return nil
	}
	client, err := queueworker.NewClient(e.clients.Queues.NewQueueClient(e.queue), &queueworker.ClientOptions{Logger: e.logger})
	if err != nil {
		return err
	}
	moved, err := queueworker.RequeuePoison(ctx, pq, client, max)
	if errors.Is(err, errs.ErrNotFound) && moved == 0 {
		err = nil
	}
	fmt.Fprintf(stdout, "requeued %d message(s) to %s\n", moved, e.queue)
	return err
}

// terminalSafe escapes, as Go does in a quoted string, every control character of s and
// every Unicode format character (bidirectional overrides): text read from a queue is
// untrusted and must not steer the terminal that prints it. Printable text is kept.
func terminalSafe(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !unsafeRune(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}
