// Package exampleenv is the main of the runnable examples under examples/: each example is
// a function run(ctx, out, connStr), and Main gives it a storage account — an embedded,
// in-memory Azurite on loopback, or with -use-env the account of
// AZURE_STORAGE_CONNECTION_STRING — and stops on SIGINT/SIGTERM.
package exampleenv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/tablepatterns/tablepatterns/internal/azurite"
)

// Main runs the example named name and exits: 0 when run returns nil, 1 with the error
// on stderr otherwise.
func Main(name string, run func(ctx context.Context, out io.Writer, connStr string) error) {
	useEnv := flag.Bool("use-env", false, "use the account of AZURE_STORAGE_CONNECTION_STRING instead of an embedded Azurite")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := Start(ctx, os.Stdout, *useEnv, run)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// Start runs run on an embedded Azurite, which it stops afterwards, or with useEnv on the
// account of AZURE_STORAGE_CONNECTION_STRING (never printed: it holds the account key).
func Start(ctx context.Context, out io.Writer, useEnv bool, run func(ctx context.Context, out io.Writer, connStr string) error) error {
	if useEnv {
		connStr := os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
		if connStr == "" {
			return errors.New("-use-env: AZURE_STORAGE_CONNECTION_STRING is not set")
		}
		return run(ctx, out, connStr)
	}
	fmt.Fprintln(out, "starting an in-memory Azurite on 127.0.0.1 ...")
	srv, err := azurite.Start(ctx, azurite.Options{})
	if err != nil {
		return err
	}
	defer srv.Close()
	return run(ctx, out, srv.ConnectionString)
}
