package app

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/patterns/tablearchive"
)

// sweep deletes the data blobs of a table's exports that have no manifest (left by an
// archiver killed mid-export), once they are older than -older-than.
func sweep(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	var c common
	var table, container string
	var olderThan time.Duration
	var dryRun bool
	fs := newFlagSet("sweep")
	c.register(fs)
	fs.StringVar(&table, "table", "", "")
	fs.StringVar(&container, "container", "", "")
	fs.DurationVar(&olderThan, "older-than", 24*time.Hour, "")
	fs.BoolVar(&dryRun, "dry-run", false, "")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := codec.ValidateTableName(table); err != nil {
		return err
	}
	if err := codec.ValidateContainerName(container); err != nil {
		return err
	}
	if olderThan < time.Hour {
		return usagef("sweep: -older-than must be at least 1h (a running export's data has no manifest yet), got %v", olderThan)
	}
	e, err := setup(c, stderr, getenv)
	if err != nil {
		return err
	}
	defer e.logger.Sync()
	a, err := tablearchive.New(e.clients, &tablearchive.Options{Logger: e.logger})
	if err != nil {
		return err
	}
	swept, err := a.SweepAbortedExports(ctx, container, table, olderThan, dryRun)
	for _, name := range swept {
		fmt.Fprintf(stdout, "%s/%s\n", container, name)
	}
	if err != nil {
		return err
	}
	verb := "deleted"
	if dryRun {
		verb = "would delete (dry run)"
	}
	fmt.Fprintf(stdout, "%d aborted export(s) of %s older than %v: %s\n", len(swept), table, olderThan, verb)
	return nil
}
