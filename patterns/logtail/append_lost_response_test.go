package logtail_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/logtail"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// Two Logs sharing a WriterID (a case Append handles: TestSharedWriterIDMovesToNextTick),
// the second Log's first insert dropped before it reaches the service: its retry meets the
// first Log's entry under the same key. Append must not take that entry for its own and
// report success for an entry never stored.
func TestAppendNeverTakesAnotherLogsEntryForItsOwn(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	tb := claims(t, b)
	frozen := func() time.Time { return time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC) }
	l1, _ := logtail.New(tb, &logtail.Options{Clock: frozen, WriterID: "same"})
	l2, _ := logtail.New(tb, &logtail.Options{Clock: frozen, WriterID: "same"})
	if _, err := l1.Append(b.Ctx, &Claim{Employee: "E", ClaimID: "first"}); err != nil {
		t.Fatal(err)
	}
	b.Proxy().AddRule(faultproxy.Rule{Name: "drop", Match: faultproxy.IsInsertEntity, Times: 1, Action: faultproxy.DropBeforeForward()})
	_, err := l2.Append(b.Ctx, &Claim{Employee: "E", ClaimID: "second"})
	if b.Proxy().Fired("drop") != 1 {
		t.Fatal("the drop did not fire")
	}
	all, qerr := l1.Newest(b.Ctx, "E", 10)
	if qerr != nil {
		t.Fatal(qerr)
	}
	if err == nil && len(all) != 2 {
		t.Fatalf("Append returned nil but the entry was never stored: entries %+v", all)
	}
}

// An append whose response is lost, or that meets a busy server, is stored exactly once on
// a table that tracks writes; without tracking the lost one says repo.ErrOutcomeUnknown
// (another Log with the same WriterID could hold the key).
func TestAppendUnderFaultsStoredOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	o := b.RepoOptions()
	o.TrackWrites = true
	tracked, err := repo.New[Claim](b.Clients.Tables, b.Table, o)
	if err != nil {
		t.Fatal(err)
	}
	log, err := logtail.New(tracked, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Proxy().AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsInsertEntity, Times: 1, Action: faultproxy.DropAfterForward()})
	b.Proxy().AddRule(faultproxy.Rule{Name: "busy", Match: faultproxy.IsInsertEntity, Times: 1, Action: faultproxy.Respond(503, "ServerBusy")})
	for i := range 3 {
		if _, err := log.Append(b.Ctx, &Claim{Employee: "E", ClaimID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if b.Proxy().Fired("lost") != 1 || b.Proxy().Fired("busy") != 1 {
		t.Fatalf("faults fired: lost %d, busy %d", b.Proxy().Fired("lost"), b.Proxy().Fired("busy"))
	}
	all, err := log.Table().Collect(b.Ctx, repo.Query{Filter: filter.PartitionKey("E")})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 {
		t.Fatalf("%d entities stored for 3 appends", len(all))
	}
}
