package logtail_test

import (
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/logtail"
)

// Attack: Append claims that a retried insert meeting its key taken after an unanswered
// attempt "met its own entry: nobody else writes this key". Yet two Logs sharing a WriterID
// is a case the package handles on purpose (TestSharedWriterIDMovesToNextTick). When the
// second Log's first attempt is dropped before it reaches the service (not stored, but the
// client cannot know), its retry meets the FIRST Log's entry and Append reports success:
// the second entry is never stored.
func TestAttackSharedWriterIDLostAttemptReportsForeignEntry(t *testing.T) {
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
