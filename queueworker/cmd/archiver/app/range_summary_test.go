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

// The run's summary says, per archive-range job, what it selected, moved and skipped,
// and warns of a condition that can match nothing: a misspelled property (-where
// Createdd:lt:...) and an Edm.Int32 condition on an Int64 property no longer pass as
// "processed 2, failed 0" alone.
func TestRunSummaryReportsEachRangeJob(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.TableName(t)
	src, _ := repo.New[codec.Entity](clients.Tables, name+"Orders", nil)
	dst, _ := repo.New[codec.Entity](clients.Tables, name+"Old", nil)
	if err := src.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.DeleteTable(context.Background()); _ = dst.DeleteTable(context.Background()) })
	var orders []*codec.Entity
	for i := range 5 {
		orders = append(orders, &codec.Entity{PartitionKey: "2020", RowKey: fmt.Sprintf("%03d", i), Properties: map[string]any{"TotalCents": int64(100 * i)}})
	}
	if err := src.BulkWrite(ctx, orders, nil); err != nil {
		t.Fatal(err)
	}
	queue := testenv.QueueName(t)
	for _, where := range []string{"Createdd:lt:Edm.DateTime:2021-01-01T00:00:00Z", "TotalCents:lt:Edm.Int32:500"} {
		if code, out, stderr := archiver(t, "enqueue", "archive-range", "-queue", queue, "-source", src.Name(), "-pk", "2020", "-where", where, "-target-table", dst.Name()); code != 0 {
			t.Fatalf("enqueue: %d\n%s\n%s", code, out, stderr)
		}
	}
	code, out, stderr := archiver(t, "run", "-drain", "-queue", queue, "-allow-any")
	if code != 0 {
		t.Fatalf("run: %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{
		`-where Createdd:lt:Edm.DateTime:"2021-01-01T00:00:00Z" -> table ` + dst.Name() + `: selected 0, moved 0, skipped 0`,
		"property Createdd never occurs",
		`-where TotalCents:lt:Edm.Int32:"500" -> table ` + dst.Name() + `: selected 0, moved 0, skipped 0`,
		"property TotalCents is stored as [Edm.Int64 in 5]",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("the summary does not say %q:\n%s", want, out)
		}
	}
}
