package app

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/patterns/migrate"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// Migration is a live migration whose range jobs the archiver runs and whose stages it
// moves: *migrate.Migration (a re-keying) and *migrate.Schema with SchemaSpec.Name (a
// staged schema evolution) implement it. Register puts its job handlers on the worker's
// registry (`archiver run`); Jobs splits one kind's job by partition bounds and
// EnqueueJob sends one (`archiver enqueue migrate-*`); Status reads its state record
// and Progress the summed progress of its current stage's range jobs (`archiver migrate
// status`); Advance takes it one stage on, running the stage's work to
// its end in this process (`archiver migrate advance`); Abort turns it back before
// CleanUp (`archiver migrate abort`).
type Migration interface {
	Register(r *queueworker.Registry) error
	Jobs(kind string, bounds ...string) ([]migrate.Job, error)
	EnqueueJob(ctx context.Context, c *queueworker.Client, job migrate.Job) error
	Status(ctx context.Context) (migrate.State, error)
	Progress(ctx context.Context) (migrate.Progress, error)
	Advance(ctx context.Context) (migrate.State, error)
	Abort(ctx context.Context) (migrate.State, error)
	// StageJob is the kind of the range job whose work Advance runs at a stage, by the
	// migration's kind (a re-keying's or a staged schema evolution's).
	StageJob(stage migrate.Stage) (string, bool)
}

// migrationJobs are the migration jobs of `archiver enqueue`: a re-keying's, then a
// staged schema evolution's.
var migrationJobs = []string{migrate.KindBackfill, migrate.KindVerify, migrate.KindCleanUp, migrate.KindAbort,
	migrate.KindSchemaRewrite, migrate.KindSchemaVerify, migrate.KindSchemaDowngrade}

// stageOf is the stage whose jobs each kind is.
var stageOf = map[string]migrate.Stage{migrate.KindBackfill: migrate.Backfill, migrate.KindVerify: migrate.Verify,
	migrate.KindCleanUp: migrate.CleanUp, migrate.KindAbort: migrate.Aborting,
	migrate.KindSchemaRewrite: migrate.Backfill, migrate.KindSchemaVerify: migrate.Verify, migrate.KindSchemaDowngrade: migrate.Aborting}

// migration builds the migration name on e (once per command).
func (e *Env) migration(name string) (Migration, error) {
	build, ok := e.ext.migrations()[name]
	if !ok {
		return nil, usagef("extensions: no migration %q (this archiver's: %s)", name, strings.Join(e.ext.migrationNames(), ", "))
	}
	m, err := build(e)
	if err == nil && isNil(m) {
		err = usagef("extensions: the builder of migration %q returned no migration", name)
	}
	if err != nil {
		return nil, fmt.Errorf("migration %s: %w", name, err)
	}
	return m, nil
}

func (x *Extensions) migrations() map[string]func(*Env) (Migration, error) {
	if x == nil {
		return nil
	}
	return x.Migrations
}

func (x *Extensions) migrationNames() []string {
	var out []string
	for name := range x.migrations() {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// boundList is a repeatable -pk-bound flag: PartitionKeys in the service's order
// (keys.Compare, by UTF-16 code units), each a valid key.
type boundList []string

func (b *boundList) String() string { return strings.Join(*b, ",") }

func (b *boundList) Set(v string) error {
	if v == "" || (len(*b) > 0 && keys.Compare(v, (*b)[len(*b)-1]) <= 0) {
		return usagef("-pk-bound: bounds are not empty and ascend")
	}
	if err := codec.ValidateKey("PartitionKey", v); err != nil {
		return err
	}
	*b = append(*b, v)
	return nil
}

// enqueueMigration enqueues the jobs of one migration kind, one per part of the
// partitions the -pk-bound flags cut, or with -dry-run prints them and sends nothing.
// It prints the migration's stage first: jobs of a stage not reached wait (snoozed),
// jobs of a stage left are dropped.
func enqueueMigration(ctx context.Context, kind string, args []string, stdout, stderr io.Writer, getenv func(string) string, x *Extensions) error {
	var c common
	var name string
	var bounds boundList
	var dry bool
	fs := newFlagSet("enqueue " + kind)
	c.register(fs)
	fs.StringVar(&name, "migration", "", "")
	fs.Var(&bounds, "pk-bound", "")
	fs.BoolVar(&dry, "dry-run", false, "")
	if err := parse(fs, args); err != nil {
		return err
	}
	if name == "" {
		return usagef("enqueue %s: -migration NAME is required", kind)
	}
	if _, ok := x.migrations()[name]; !ok {
		return usagef("enqueue %s: no migration %q (this archiver's: %s)", kind, name, strings.Join(x.migrationNames(), ", "))
	}
	e, err := setup(c, stderr, getenv)
	if err != nil {
		return err
	}
	qc := e.clients.Queues.NewQueueClient(e.queue)
	q, err := queueworker.NewClient(qc, &queueworker.ClientOptions{Logger: e.logger})
	if err != nil {
		return err
	}
	m, err := x.env(e, q).migration(name)
	if err != nil {
		return err
	}
	jobs, err := m.Jobs(kind, bounds...)
	if err != nil {
		return err
	}
	st, err := m.Status(ctx)
	if err != nil {
		return err
	}
	printState(stdout, name, st)
	if stageOf[kind] == migrate.Aborting && st.Stage != migrate.Aborting {
		// An abort job acts only once the record says Aborting; a worker cancels one
		// delivered before (the migration may never be aborted).
		return fmt.Errorf("enqueue %s: migration %s is at stage %s, not aborting: run 'archiver migrate abort -migration %s' first", kind, name, stageName(st.Stage), name)
	}
	if st.Stage != stageOf[kind] {
		fmt.Fprintf(stdout, "note: %s jobs act at stage %s; until then a worker snoozes them, after it drops them\n", kind, stageOf[kind])
	}
	for _, j := range jobs {
		fmt.Fprintf(stdout, "  %s partitions [%s, %s)\n", j.Kind, orOpen(j.PartitionKeyFrom), orOpen(j.PartitionKeyTo))
	}
	if dry {
		fmt.Fprintf(stdout, "dry run: %d %s jobs not enqueued\n", len(jobs), kind)
		return nil
	}
	for i, j := range jobs {
		err := m.EnqueueJob(ctx, q, j)
		if i == 0 && queueMissing(err) {
			if err = createQueue(ctx, qc); err == nil {
				err = m.EnqueueJob(ctx, q, j)
			}
		}
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "enqueued %d %s jobs on %s; progress: 'archiver migrate status -migration %s' (summed over the workers)\n", len(jobs), kind, e.queue, name)
	return nil
}

// printState prints a migration's state record: its stage, since when (the service's
// time of the transition) and the stage it came from.
func printState(w io.Writer, name string, st migrate.State) {
	if st.Stage == "" {
		fmt.Fprintf(w, "migration %s: stage %s\n", name, stageName(st.Stage))
		return
	}
	fmt.Fprintf(w, "migration %s: stage %s since %s (from %s)\n", name, stageName(st.Stage), st.Since.UTC().Format("2006-01-02T15:04:05Z"), stageName(st.Previous))
}

// printProgress prints the summed progress of the current stage's range jobs, a line
// per job kind: ranges done/started (/total when known), then the counts, scanned first.
func printProgress(w io.Writer, p migrate.Progress) {
	for _, k := range p.Kinds {
		ranges := fmt.Sprintf("ranges done/started %d/%d", k.Done, k.Started)
		if k.Total > 0 {
			ranges = fmt.Sprintf("ranges done/started/total %d/%d/%d", k.Done, k.Started, k.Total)
		}
		names := make([]string, 0, len(k.Counts))
		for n := range k.Counts {
			names = append(names, n)
		}
		slices.SortFunc(names, func(a, b string) int {
			return cmp.Or(cmp.Compare(rankCount(a), rankCount(b)), cmp.Compare(a, b))
		})
		counts := make([]string, 0, len(names))
		for _, n := range names {
			counts = append(counts, fmt.Sprintf("%s %d", n, k.Counts[n]))
		}
		fmt.Fprintf(w, "progress %s: %s; %s\n", k.Kind, ranges, strings.Join(counts, ", "))
	}
	if p.Skipped > 0 {
		fmt.Fprintf(w, "progress: %d rows skipped (they do not validate)\n", p.Skipped)
	}
}

// rankCount puts "scanned" before the kind's own counts.
func rankCount(name string) int {
	if name == "scanned" {
		return 0
	}
	return 1
}

func stageName(s migrate.Stage) string {
	if s == "" {
		return "none (not planned)"
	}
	return string(s)
}

func orOpen(s string) string {
	if s == "" {
		return "open"
	}
	return fmt.Sprintf("%q", s)
}

// migrationUsage is the usage text of the migration jobs.
func (x *Extensions) migrationUsage() string {
	const head = `
Live migrations (patterns/migrate):
  archiver enqueue migrate-backfill|migrate-verify|migrate-cleanup|migrate-abort [flags]
                              -migration NAME [-pk-bound PK ...] [-dry-run]
                              the range jobs of a migration's stage, one per part of the
                              partitions the bounds cut; -dry-run prints them and sends
                              nothing; 'archiver run' logs each page ("migrate: page done")
                              and 'archiver migrate status' shows the sum over the workers;
                              migrate-abort only once the migration is aborting
  archiver enqueue migrate-schema-rewrite|migrate-schema-verify|migrate-schema-downgrade
                              [flags] -migration NAME [-pk-bound PK ...] [-dry-run]
                              the same for a staged schema evolution (migrate.Schema):
                              its rewrite (Backfill), verify and downgrade (Aborting)
  archiver migrate status|advance|abort [flags] -migration NAME
                              status prints the stage, since when and the stage before,
                              then the progress of the stage's range jobs summed over the
                              workers (a line per kind: ranges done/started/total, counts);
                              advance waits until every process follows the stage, runs
                              its work to the end in this process (a "migrate: page done"
                              line per page), then records the next stage; abort turns the
                              migration back to the old layout (before clean-up only):
                              then advance, or enqueue migrate-abort first for the workers
`
	names := x.migrationNames()
	if len(names) == 0 {
		return head + "  This archiver has no migrations: a migration is Go code (its types, keys and\n  transform), so a team builds its own archiver with app.MainWith and Extensions.Migrations.\n"
	}
	return head + "  Migrations of this archiver: " + strings.Join(names, ", ") + "\n"
}
