package tabletest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Main is the main function of a small program that needs a storage account, such as the
// runnable examples of tablepatterns: it runs run on an in-memory Azurite that it starts
// (see Start) and stops afterwards or, with the command-line flag -use-env, on the account
// of AZURE_STORAGE_CONNECTION_STRING (never printed: it holds the account key). run's
// context ends on SIGINT or SIGTERM. Main exits: 0 when run returns nil, 1 with name and
// the error on stderr otherwise.
//
//	func main() { tabletest.Main("orders", run) }
//
//	func run(ctx context.Context, out io.Writer, connectionString string) error {
//		clients, err := account.NewClients(connectionString, nil)
//		...
//	}
func Main(name string, run func(ctx context.Context, out io.Writer, connectionString string) error) {
	useEnv := flag.Bool("use-env", false, "use the account of AZURE_STORAGE_CONNECTION_STRING instead of an embedded Azurite")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runProgram(ctx, os.Stdout, *useEnv, os.Getenv, run)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// runProgram is Main without the flags, the signals and the exit.
func runProgram(ctx context.Context, out io.Writer, useEnv bool, getenv func(string) string, run func(context.Context, io.Writer, string) error) error {
	if useEnv {
		cs := getenv("AZURE_STORAGE_CONNECTION_STRING")
		if cs == "" {
			return errors.New("-use-env: AZURE_STORAGE_CONNECTION_STRING is not set")
		}
		return run(ctx, out, cs)
	}
	fmt.Fprintln(out, "starting an in-memory Azurite on 127.0.0.1 ...")
	srv, err := Start(ctx, nil)
	if err != nil {
		return err
	}
	defer srv.Close()
	return run(ctx, out, srv.ConnectionString())
}
