package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/tablearchive"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// enqueue archive-table -shards N: the worker plans, exports and combines the shards on
// its own queue (processed: the plan, N shards and the combines), deletes the table, and
// restore-table brings every generation back; the usage text names the flag (-shards out
// of range: TestBadJobsExitTwoBeforeAnyRequest).
func TestShardedArchiveFromTheCommandLine(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	name := testenv.TableName(t)
	clients, day := filledTable(t, name+"Day", 600)
	queue, container := testenv.QueueName(t), testenv.ContainerName(t)
	if code, _, stderr := archiver(t, "enqueue", "archive-table", "-queue", queue, "-table", day.Name(), "-container", container, "-sealed", "-shards", "3"); code != 0 {
		t.Fatalf("enqueue: %d %s", code, stderr)
	}
	code, out, stderr := archiver(t, "run", "-drain", "-allow-any", "-queue", queue)
	if code != 0 || !strings.Contains(out, "poisoned 0") {
		t.Fatalf("run -drain: exit %d\n%s\n%s", code, out, stderr)
	}
	if ok, _ := day.Exists(ctx); ok {
		t.Fatal("the sharded table still exists")
	}
	a, err := tablearchive.New(clients, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := a.ReadManifest(ctx, container, day.Name())
	if err != nil || m.Shards != 3 || m.Entities != 600 {
		t.Fatalf("manifest %+v (%v)", m, err)
	}
	restored := name + "Back"
	if code, _, stderr := archiver(t, "enqueue", "restore-table", "-queue", queue, "-table", day.Name(), "-container", container, "-target", restored, "-generation", "all"); code != 0 {
		t.Fatalf("enqueue restore: %s", stderr)
	}
	if code, out, stderr := archiver(t, "run", "-drain", "-allow-any", "-queue", queue); code != 0 || !strings.Contains(out, "processed 1,") {
		t.Fatalf("run -drain (restore): exit %d\n%s\n%s", code, out, stderr)
	}
	back, _ := repo.New[codec.Entity](clients.Tables, restored, nil)
	t.Cleanup(func() { _ = back.DeleteTable(context.Background()) })
	if got, err := back.Collect(ctx, repo.Query{}); err != nil || len(got) != 600 {
		t.Fatalf("restored %d entities (%v)", len(got), err)
	}

	var help strings.Builder
	if app.Main(ctx, []string{"help"}, &help, &help, func(string) string { return "" }); !strings.Contains(help.String(), "-shards N") {
		t.Error("the usage text does not name -shards")
	}
}

// filledTable creates the table name (deleted at the end of the test) with n entities
// over six partitions, N the row number.
func filledTable(t *testing.T, name string, n int) (*account.Clients, *repo.Table[codec.Entity]) {
	t.Helper()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := repo.New[codec.Entity](clients.Tables, name, nil)
	if err == nil {
		err = tb.CreateIfNotExists(t.Context())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tb.DeleteTable(context.Background()) })
	items := make([]*codec.Entity, n)
	for i := range items {
		items[i] = &codec.Entity{PartitionKey: fmt.Sprintf("user%d", i%6), RowKey: fmt.Sprintf("%04d", i), Properties: map[string]any{"N": int32(i)}}
	}
	if err := tb.BulkWrite(t.Context(), items, nil); err != nil {
		t.Fatal(err)
	}
	return clients, tb
}
