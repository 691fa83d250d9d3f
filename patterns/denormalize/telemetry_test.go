package denormalize

import (
	"testing"

	"go.opentelemetry.io/otel"

	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/internal/telemetry/telemetrytest"
)

// Denormalization across partitions in one trace: put_target (under the caller's span)
// enqueues the message whose process span holds reconcile_target; update_source likewise
// leads to refresh_source.
func TestAcrossSpans(t *testing.T) {
	t.Parallel()
	telemetrytest.Install()
	b := setup(t, false, true)
	q := b.queue()
	r := b.across(q, nil)
	jones := manager("Sales", "000152", "Jun", "Jones", "555-0152")
	b.insert(jones)
	ctx, root := otel.Tracer("test").Start(b.Ctx, "test.caller")
	if err := r.PutTarget(ctx, dept("Departments", "Sales", "Sales", jones)); err != nil {
		t.Fatal(err)
	}
	root.End()
	b.drain(q, r)
	jones.Phone = "555-7777"
	if err := r.UpdateSource(b.Ctx, jones); err != nil {
		t.Fatal(err)
	}
	b.drain(q, r)

	targets := telemetry.KeyTable.String(r.targets.Name())
	puts := telemetrytest.Find("denormalize.put_target", targets)
	if len(puts) != 1 || puts[0].Parent.SpanID() != root.SpanContext().SpanID() {
		t.Fatalf("put_target spans %d, or not under the caller's span", len(puts))
	}
	// Follow put_target -> enqueue -> process -> reconcile_target.
	var found bool
	for _, rec := range telemetrytest.Find("denormalize.reconcile_target", targets) {
		process, ok := telemetrytest.ByID(rec.Parent)
		if !ok || process.Name != "queueworker.process" {
			continue
		}
		enqueue, ok := telemetrytest.ByID(process.Parent)
		if ok && enqueue.Name == "queueworker.enqueue" && telemetrytest.IsChild(enqueue, puts[0]) {
			found = true
		}
	}
	if !found {
		t.Fatal("no reconcile_target span under the process span of put_target's message")
	}
	ups := telemetrytest.Find("denormalize.update_source", telemetry.KeyTable.String(r.sources.Name()))
	refresh := telemetrytest.Find("denormalize.refresh_source", telemetry.KeyTable.String(r.sources.Name()))
	if len(ups) != 1 || len(refresh) == 0 {
		t.Fatalf("%d update_source spans, %d refresh_source spans", len(ups), len(refresh))
	}
	if refresh[0].SpanContext.TraceID() != ups[0].SpanContext.TraceID() {
		t.Error("refresh_source is not in update_source's trace")
	}
}
