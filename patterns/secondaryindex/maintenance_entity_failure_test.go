package secondaryindex_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
)

// An Intra backfill page runs every entity's rewrite on retry.Schedule, "every call runs,
// the errors joined": one entity of a page of six whose transaction the service refuses
// (403, every time) leaves the other five written, the error names no indexed value (no
// copy's key), no checkpoint is stored or returned past the page (the one returned counts the five
// written), and a Repair that
// meets the same refusal counts only the entities it wrote.
func TestIntraBackfillPageRunsEveryEntityAndCheckpointsNonePastAFailure(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	const n, refused = 6, 3
	var items []*Employee
	for i := range n {
		items = append(items, emp(i, "First", "Last", fmt.Sprintf("secret%05d@contoso.com", i)))
	}
	if err := b.intra(t).Backfill(b.Ctx, items); err != nil { // primary copies only
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	x := b.intraLogged(t, zap.New(core), nil, byEmail)
	err := backfillPastARefusal(t, b, x, fmt.Sprintf("secret%05d", refused), n)
	if got := len(b.rows(t, "Sales")); got != 2*n-1 {
		t.Errorf("Sales holds %d rows, want %d primary copies and the %d email copies of the entities not refused", got, n, n-1)
	}
	checkRedactedAndRepairCountsWrites(t, b, x, err, logs, "secret")
}

// backfillPastARefusal has the service refuse (403, every time) every transaction that
// holds refused, backfills partition Sales (one page of n entities, one of them holding
// refused) with x, and checks that the backfill fails, that no checkpoint is stored or
// returned past the page and that the returned one counts the n-1 entities written. It
// returns the backfill's error.
func backfillPastARefusal(t *testing.T, b *bed, x maintainer, refused string, n int) error {
	t.Helper()
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "refuse one entity", Action: faultproxy.Respond(http.StatusForbidden, "AuthorizationFailure"),
		Match: func(r *http.Request) bool {
			if !faultproxy.IsBatch(r) {
				return false
			}
			body, _ := io.ReadAll(r.Body)
			return bytes.Contains(body, []byte(refused))
		}})
	var stored []secondaryindex.Checkpoint
	cp, err := x.BackfillPartition(b.Ctx, "Sales", &secondaryindex.BackfillOptions{
		Checkpoint: func(_ context.Context, cp secondaryindex.Checkpoint) error { stored = append(stored, cp); return nil }})
	if err == nil {
		t.Fatal("the backfill succeeded although one entity's transaction was refused")
	}
	if cp.After != "" || cp.Done || len(stored) != 0 {
		t.Fatalf("checkpoint %+v returned, %+v stored, past the entity that failed", cp, stored)
	}
	if cp.Written != n-1 {
		t.Errorf("the returned checkpoint counts %d written, want the %d entities of the stopped page that were", cp.Written, n-1)
	}
	return err
}

// checkRedactedAndRepairCountsWrites checks that neither the backfill's error nor the log
// carries value (the start of every indexed value), then that a Repair of Sales with x,
// which meets the same refusal, finds the refused entity's copy missing, repairs none,
// fails, and does not carry value in its error either.
func checkRedactedAndRepairCountsWrites(t *testing.T, b *bed, x maintainer, backfillErr error, logs *observer.ObservedLogs, value string) {
	t.Helper()
	for _, text := range append([]string{backfillErr.Error()}, logText(logs)...) {
		if strings.Contains(text, value) {
			t.Fatalf("an indexed value in the error or the log: %s", text)
		}
	}
	r, err := x.Repair(b.Ctx, "Sales", nil)
	if err == nil || r.Repaired != 0 || r.Missing != 1 {
		t.Fatalf("repair: %+v, %v; want the refused entity's copy found missing, none repaired, and its error", r, err)
	}
	if strings.Contains(err.Error(), value) {
		t.Fatalf("an indexed value in the repair's error: %v", err)
	}
}

// logText is every entry of logs, message and fields.
func logText(logs *observer.ObservedLogs) []string {
	var out []string
	for _, e := range logs.All() {
		out = append(out, fmt.Sprintf("%s %v", e.Message, e.ContextMap()))
	}
	return out
}

// The same for Inter: one entity of a page of six whose index transaction is refused
// (403, every time) leaves the other five reconciled (copy and ref), the error and the
// log name no indexed value, no checkpoint passes the page (the one returned counts the
// five reconciled), and a Repair that meets the
// same refusal counts only what it wrote.
func TestInterBackfillPageRunsEveryEntityAndCheckpointsNonePastAFailure(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	const n = 6
	b.seedEmployeesIn(t, n, func(int) string { return "Sales" })
	q, _ := b.Queue()
	core, logs := observer.New(zapcore.DebugLevel)
	x, err := secondaryindex.NewInter(b.Clients.Tables, b.Table, q, []secondaryindex.Index[Employee]{byEmail},
		&secondaryindex.InterOptions{SafetyDelay: -1, Table: repo.Options{Logger: zap.New(core)}})
	if err != nil {
		t.Fatal(err)
	}
	err = backfillPastARefusal(t, b, x, "employee000003", n)
	checkIndexed(t, b, "email_Sales", n-1)
	checkRedactedAndRepairCountsWrites(t, b, x, err, logs, "employee0")
}
