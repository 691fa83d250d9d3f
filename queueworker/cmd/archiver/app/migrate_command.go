package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/migrate"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// migrateCommand runs `archiver migrate status|advance|abort -migration NAME`: the
// operator's commands that read and move a migration's state record.
func migrateCommand(ctx context.Context, sub string, args []string, stdout, stderr io.Writer, getenv func(string) string, x *Extensions) error {
	if sub != "status" && sub != "advance" && sub != "abort" {
		return usagef("migrate: unknown command %q: status, advance or abort", sub)
	}
	var c common
	var name string
	fs := newFlagSet("migrate " + sub)
	c.register(fs)
	fs.StringVar(&name, "migration", "", "")
	if err := parse(fs, args); err != nil {
		return err
	}
	if name == "" {
		return usagef("migrate %s: -migration NAME is required", sub)
	}
	if _, ok := x.migrations()[name]; !ok {
		return usagef("migrate %s: no migration %q (this archiver's: %s)", sub, name, strings.Join(x.migrationNames(), ", "))
	}
	e, err := setup(c, stderr, getenv)
	if err != nil {
		return err
	}
	q, err := queueworker.NewClient(e.clients.Queues.NewQueueClient(e.queue), &queueworker.ClientOptions{Logger: e.logger})
	if err != nil {
		return err
	}
	m, err := x.env(e, q).migration(name)
	if err != nil {
		return err
	}
	st, err := m.Status(ctx)
	if err != nil {
		return outcome(err)
	}
	printState(stdout, name, st)
	switch sub {
	case "advance":
		return advanceMigration(ctx, m, name, st, stdout)
	case "abort":
		return abortMigration(ctx, m, name, st, stdout)
	}
	if st.Stage == "" {
		return fmt.Errorf("migration %s: %w", name, errs.ErrNotFound)
	}
	// Progress is advisory: a failure to read it leaves the status shown.
	if p, err := m.Progress(ctx); err != nil {
		fmt.Fprintf(stderr, "progress not read: %s\n", errs.Redact(err))
	} else {
		printProgress(stdout, p)
	}
	return nil
}

// advanceMigration takes the migration one stage on and says what it waits for and runs.
func advanceMigration(ctx context.Context, m Migration, name string, st migrate.State, stdout io.Writer) error {
	switch st.Stage {
	case "":
		return fmt.Errorf("migration %s is not planned (the team's program plans it): %w", name, errs.ErrNotFound)
	case migrate.Done, migrate.Aborted:
		fmt.Fprintf(stdout, "nothing to advance: the migration has ended\n")
		return nil
	}
	if kind, ok := m.StageJob(st.Stage); ok {
		fmt.Fprintf(stdout, "advancing from %s: waits until every process follows it, runs its %s work to the end (progress: 'migrate: page done' lines, and 'migrate status'), then records the next stage\n", st.Stage, kind)
	} else {
		fmt.Fprintf(stdout, "advancing from %s: waits until every process follows it, then records the next stage\n", st.Stage)
	}
	now, err := m.Advance(ctx)
	if err != nil {
		return outcome(err)
	}
	printState(stdout, name, now)
	return nil
}

// abortMigration turns the migration back to the old layout.
func abortMigration(ctx context.Context, m Migration, name string, st migrate.State, stdout io.Writer) error {
	switch st.Stage {
	case "":
		return fmt.Errorf("migration %s is not planned: %w", name, errs.ErrNotFound)
	case migrate.Aborting, migrate.Aborted:
		fmt.Fprintf(stdout, "already %s\n", st.Stage)
		return nil
	}
	now, err := m.Abort(ctx)
	if err != nil {
		return outcome(err)
	}
	printState(stdout, name, now)
	kind, _ := m.StageJob(migrate.Aborting)
	fmt.Fprintf(stdout, "next: 'archiver migrate advance -migration %s' runs the abort's %s work (enqueue %s first to let the workers share it)\n", name, kind, kind)
	return nil
}

// outcome keeps a refusal read from the service (a stage that forbids the command, a
// state record that does not validate) out of the usage exit code, which promises a
// refusal before any request.
func outcome(err error) error {
	if errors.Is(err, errs.ErrInvalidInput) {
		return errors.New(errs.Redact(err))
	}
	return err
}
