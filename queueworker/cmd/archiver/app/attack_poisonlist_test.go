package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/tablearchive"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// The human output of `archiver poison list` is for an operator's terminal, and the
// poisoned jobs are whoever-can-write-the-queue's input: a job id carrying terminal
// escapes (set the window title, clear the screen, hide the lines above) is printed as
// is. The malformed case is quoted (%q); the envelope's id and kind are not. Expected:
// no raw control character from a queued job in the listing.
func TestAttackPoisonListPrintsJobEscapes(t *testing.T) {
	t.Parallel()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	queue := testenv.QueueName(t)
	q := clients.Queues.NewQueueClient(queue)
	if _, err := q.Create(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = q.Delete(context.Background(), nil)
		_, _ = clients.Queues.NewQueueClient(queue+"-poison").Delete(context.Background(), nil)
	})
	c, err := queueworker.NewClient(q, nil)
	if err != nil {
		t.Fatal(err)
	}
	job := tablearchive.ArchiveTableJob{Table: "ghost", Container: "cold"} // invalid: neither period nor sealed
	if _, err := queueworker.Enqueue(t.Context(), c, tablearchive.KindArchiveTable, "job\x1b]0;pwned\x07\x1b[2J\x1b[1A", job, nil); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := archiver(t, "run", "-drain", "-allow-any", "-queue", queue); code != app.ExitPoisoned || !strings.Contains(out, "poisoned 1") {
		t.Fatalf("run -drain: %d\n%s\n%s", code, out, stderr)
	}
	code, out, _ := archiver(t, "poison", "list", "-queue", queue)
	if code != 0 || !strings.Contains(out, "1 poison message") {
		t.Fatalf("poison list: %d\n%q", code, out)
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Fatalf("poison list prints a queued job's terminal escapes raw:\n%q", out)
	}
}
