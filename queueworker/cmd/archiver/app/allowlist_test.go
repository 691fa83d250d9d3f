package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// An archiver limited to the tables Pub* never reads the archive of a table outside its
// allowlist: the export of Secret… (5 entities, an SSN among their properties), in an
// allowed container, is not restored into PubLeak…; the restore job is refused before
// any request and goes to the poison queue saying why.
func TestRestoreNeverReadsTheArchiveOfATableOutsideTheAllowlist(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	suffix := testenv.TableName(t)[1:]
	suffix = suffix[max(0, len(suffix)-40):]
	secret, err := repo.New[codec.Entity](clients.Tables, "Secret"+suffix, nil)
	if err != nil {
		t.Fatal(err)
	}
	leak, err := repo.New[codec.Entity](clients.Tables, "PubLeak"+suffix, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := secret.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = secret.DeleteTable(context.Background()); _ = leak.DeleteTable(context.Background()) })
	var people []*codec.Entity
	for i := range 5 {
		people = append(people, &codec.Entity{PartitionKey: "people", RowKey: fmt.Sprintf("%03d", i), Properties: map[string]any{"SSN": fmt.Sprintf("078-05-112%d", i)}})
	}
	if err := secret.BulkWrite(ctx, people, nil); err != nil {
		t.Fatal(err)
	}
	queue, container := testenv.QueueName(t), testenv.ContainerName(t)
	t.Cleanup(func() { _, _ = clients.Blobs.DeleteContainer(context.Background(), container, nil) })
	// The export, by an archiver allowed to touch it.
	if code, out, stderr := archiver(t, "enqueue", "archive-table", "-queue", queue, "-table", secret.Name(), "-container", container, "-sealed", "-keep-table"); code != 0 {
		t.Fatalf("enqueue export: %d\n%s\n%s", code, out, stderr)
	}
	if code, out, stderr := archiver(t, "run", "-drain", "-queue", queue, "-allow-any"); code != 0 || !strings.Contains(out, "processed 1") {
		t.Fatalf("export: %d\n%s\n%s", code, out, stderr)
	}
	// The restore, by an archiver limited to Pub* tables and that container.
	if code, out, stderr := archiver(t, "enqueue", "restore-table", "-queue", queue, "-table", secret.Name(), "-container", container, "-target", leak.Name()); code != 0 {
		t.Fatalf("enqueue restore: %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr := archiver(t, "run", "-drain", "-queue", queue, "-allow-tables", "Pub", "-allow-containers", container)
	if exists, err := leak.Exists(ctx); err != nil || exists {
		got, _ := leak.Collect(ctx, repo.Query{})
		t.Fatalf("the restore wrote %d entities of %s into %s (exists %v, %v): exit %d\n%s\n%s", len(got), secret.Name(), leak.Name(), exists, err, code, out, stderr)
	}
	_, poisoned, _ := archiver(t, "poison", "list", "-queue", queue)
	if !strings.Contains(poisoned, "not allowed") || !strings.Contains(poisoned, secret.Name()) {
		t.Fatalf("the refused restore is not in the poison queue with its reason:\n%s\nrun: exit %d\n%s\n%s", poisoned, code, out, stderr)
	}
}

// An allowlist flag that is given but holds no prefix ("-allow-tables ' '" or ",", e.g.
// from a template whose variable came out blank) must not read as "allow everything"
// (the worker would delete a table outside anything the operator meant to allow, without
// even the no-allowlist warning): it is a usage error (exit 2), or at least the job is
// refused.
func TestBlankAllowlistNeverAllowsEverything(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	victim, err := repo.New[codec.Entity](clients.Tables, testenv.TableName(t)+"Victim", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := victim.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = victim.DeleteTable(t.Context()) })
	if err := victim.Insert(ctx, &codec.Entity{PartitionKey: "p", RowKey: "r"}); err != nil {
		t.Fatal(err)
	}
	queue, container := testenv.QueueName(t), testenv.ContainerName(t)
	if code, out, stderr := archiver(t, "enqueue", "archive-table", "-queue", queue, "-table", victim.Name(), "-container", container, "-sealed"); code != 0 {
		t.Fatalf("enqueue: %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr := archiver(t, "run", "-drain", "-queue", queue, "-allow-tables", " , ", "-allow-containers", " ")
	exists, _ := victim.Exists(ctx)
	if code == 2 || exists {
		return // refused
	}
	t.Fatalf("run with blank allowlists: exit %d, table deleted: %v, warned: %v\n%s", code, !exists, strings.Contains(stderr, "no allowlist"), out)
}
