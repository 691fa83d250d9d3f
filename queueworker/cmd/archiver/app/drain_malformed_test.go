package app_test

import (
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// A message on the job queue that is not a job at all (another writer's text) goes to
// the poison queue, and run -drain exits ExitPoisoned for it as for a job that failed.
func TestDrainExitsPoisonedForAMessageThatIsNoJob(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	queue := testenv.QueueName(t)
	q := clients.Queues.NewQueueClient(queue)
	if _, err := q.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := q.EnqueueMessage(ctx, "not a job \x1b[2J", nil); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := archiver(t, "run", "-drain", "-queue", queue, "-allow-tables", "Inside", "-allow-containers", "inside")
	if code != app.ExitPoisoned || !strings.Contains(out, "poisoned 1") {
		t.Fatalf("run -drain with a malformed message: exit %d, want %d\n%s\n%s", code, app.ExitPoisoned, out, stderr)
	}
	if strings.Contains(out+stderr, "\x1b") {
		t.Fatalf("the message's escape sequence reached the terminal:\n%q\n%q", out, stderr)
	}
}
