// Command archiver runs tablepatterns' archive jobs: it is a queue worker for the jobs of
// package patterns/consistency, plus the commands an operator needs around it.
//
//	archiver run [-drain] [-queue archive-jobs] [-concurrency 16] ...
//	archiver enqueue archive-entity -source Current -pk Sales -rk 000123 -target-table Archive
//	archiver enqueue archive-table  -table SignIns20240601 -container cold
//	archiver enqueue archive-table  -table BigTable -container cold -sealed -shards 8
//	archiver enqueue restore-table  -table SignIns20240601 -container cold [-target T]
//	archiver enqueue archive-range  -source Current -pk Sales -rk-to 000500 -target-table Archive
//	archiver poison list [-n 32]
//	archiver poison requeue [-max 0]
//
// The storage account comes from AZURE_STORAGE_CONNECTION_STRING (or -connection-string-env
// NAME); without it, the local Azurite on its default ports. With -auth default it signs
// in with a Microsoft Entra ID token (azidentity.DefaultAzureCredential) on the account
// named by -account or the -*-endpoint flags, and uses no account key. Run `archiver help`
// for the flags.
//
// Exit codes:
//
//	0  done
//	1  failed
//	2  bad command line, configuration or job (checked before any request)
//	3  run -drain: drained, but a job it ran went to the poison queue (see poison list)
//
// This binary knows no index: `archiver enqueue backfill|verify|repair -index NAME` needs
// a team's own archiver, a main that calls app.MainWith with its indexes in
// app.Extensions (see examples/indexarchiver).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
