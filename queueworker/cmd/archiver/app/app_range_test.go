package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// enqueue archive-range: a key range and a filter, run by `run -drain` through the
// continuation messages (2,400 entities: three pages), leave exactly what they do not
// select; bad ranges exit 2 before any request.
func TestEnqueueArchiveRange(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.TableName(t)
	current, _ := repo.New[codec.Entity](clients.Tables, name+"Cur", nil)
	archive, _ := repo.New[codec.Entity](clients.Tables, name+"Arc", nil)
	for _, tb := range []*repo.Table[codec.Entity]{current, archive} {
		if err := tb.CreateIfNotExists(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tb.DeleteTable(context.Background()) })
	}
	var items []*codec.Entity
	for _, pk := range []string{"a", "b", "c", "d"} {
		for i := 0; i < 800; i++ {
			items = append(items, &codec.Entity{PartitionKey: pk, RowKey: fmt.Sprintf("%04d", i), Properties: map[string]any{"Age": int32(i % 100)}})
		}
	}
	if err := current.BulkWrite(ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	queue := testenv.QueueName(t)
	for _, args := range [][]string{
		{"-pk-from", "a", "-pk-to", "d"}, // 2,400 entities
		{"-pk", "d", "-where", "Age:lt:Edm.Int32:10"},
	} {
		args = append([]string{"enqueue", "archive-range", "-queue", queue, "-source", current.Name(), "-target-table", archive.Name()}, args...)
		if code, _, stderr := archiver(t, args...); code != 0 {
			t.Fatalf("%q: %d %s", args, code, stderr)
		}
	}
	code, out, stderr := archiver(t, "run", "-drain", "-allow-any", "-queue", queue)
	if code != 0 || !strings.Contains(out, "processed 4") || !strings.Contains(out, "poisoned 0") {
		t.Fatalf("run -drain: exit %d\n%s\n%s", code, out, stderr)
	}
	moved, err := archive.Collect(ctx, repo.Query{})
	if err != nil || len(moved) != 2400+80 {
		t.Fatalf("archive holds %d (%v)", len(moved), err)
	}
	left, err := current.Collect(ctx, repo.Query{})
	if err != nil || len(left) != 800-80 {
		t.Fatalf("current holds %d (%v)", len(left), err)
	}
	for _, e := range left {
		if e.PartitionKey != "d" || e.Properties["Age"].(int32) < 10 {
			t.Fatalf("left behind: %s/%s %v", e.PartitionKey, e.RowKey, e.Properties)
		}
	}

	// Nothing listens on port 1: any request would fail with exit 1.
	unreachable := "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;" +
		"BlobEndpoint=http://127.0.0.1:1/devstoreaccount1;QueueEndpoint=http://127.0.0.1:1/devstoreaccount1;TableEndpoint=http://127.0.0.1:1/devstoreaccount1;"
	for _, args := range [][]string{
		{"-source", "Current", "-target-table", "Archive"},                                             // the whole table
		{"-source", "Current", "-pk", "a", "-pk-from", "a", "-target-table", "Archive"},                // both
		{"-source", "Current", "-pk", "a", "-rk-from", "5", "-rk-to", "1", "-target-table", "Archive"}, // empty range
		{"-source", "Current", "-pk", "a/b", "-target-table", "Archive"},                               // bad key
		{"-source", "Current", "-pk", "a"},                                                             // no target
		{"-source", "Current", "-where", "Age:lt:30", "-target-table", "Archive"},                      // not 4 fields
		{"-source", "Current", "-where", "Age or 1:eq::x", "-target-table", "Archive"},                 // not a name
	} {
		code, _, stderr := archiverAt(t, unreachable, append([]string{"enqueue", "archive-range"}, args...)...)
		if code != app.ExitUsage || !strings.Contains(stderr, "archiver:") {
			t.Errorf("%q: exit %d, want 2\n%s", args, code, stderr)
		}
	}
}
