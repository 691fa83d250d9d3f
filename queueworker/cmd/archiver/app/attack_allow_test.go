package app_test

import (
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// An allowlist flag that is given but holds no prefix ("-allow-tables ' '" or ",", e.g.
// from a template whose variable came out blank) is parsed to nil, which the archiver
// takes as "allow everything"; the no-allowlist warning only looks at the raw flag text,
// so it is not even logged. The worker then deletes a table outside anything the operator
// meant to allow. Expected: a usage error (exit 2), or at least the job refused.
func TestAttackBlankAllowlistFailsOpen(t *testing.T) {
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
