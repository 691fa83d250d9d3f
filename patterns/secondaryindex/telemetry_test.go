package secondaryindex_test

import (
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/tracing/azotel"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/internal/telemetry/telemetrytest"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// children returns the ended spans whose parent is p.
func children(p tracetest.SpanStub) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range telemetrytest.Spans() {
		if telemetrytest.IsChild(s, p) {
			out = append(out, s)
		}
	}
	return out
}

// An inter-partition index write and its reconciliation form one trace:
// secondaryindex.write holds the Azure SDK's spans of the primary write (through azotel in
// ClientOptions) and the enqueue of the reconciliation; the worker's process span is a
// child of that enqueue, and secondaryindex.reconcile, with the SDK's spans of its reads
// and transaction, a child of the process span.
func TestInterWriteAndReconcileSpans(t *testing.T) {
	t.Parallel()
	telemetrytest.Install()
	b := setup(t, false)
	clients, err := account.NewClients(testenv.ConnectionString(t), &repo.ClientOptions{
		Azure: policy.ClientOptions{TracingProvider: azotel.NewTracingProvider(otel.GetTracerProvider(), nil)},
	})
	if err != nil {
		t.Fatal(err)
	}
	b.Clients = clients
	q, name := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	w := b.worker(t, name, x)
	if err := x.Insert(b.Ctx, iemp(301, "Ann", "Lee", "ann@contoso.com")); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	b.expect(t, "email_Sales", [2]string{"ann@contoso.com", "000301"})

	table := telemetry.KeyTable.String(b.Table)
	writes := telemetrytest.Find("secondaryindex.write", table)
	if len(writes) != 1 {
		t.Fatalf("%d write spans for the table, want 1", len(writes))
	}
	write := writes[0]
	var enqueue *tracetest.SpanStub
	sdk := 0
	for _, c := range children(write) {
		switch {
		case c.Name == "queueworker.enqueue":
			enqueue = &c
		case strings.HasPrefix(c.Name, "Client."):
			sdk++
		}
	}
	if enqueue == nil || sdk == 0 {
		t.Fatalf("write span children: enqueue %v, %d Azure SDK spans; want both", enqueue != nil, sdk)
	}
	var process *tracetest.SpanStub
	for _, c := range children(*enqueue) {
		if c.Name == "queueworker.process" {
			process = &c
		}
	}
	if process == nil {
		t.Fatal("no process span under the enqueue span")
	}
	var reconcile *tracetest.SpanStub
	for _, c := range children(*process) {
		if c.Name == "secondaryindex.reconcile" {
			reconcile = &c
		}
	}
	if reconcile == nil || !telemetrytest.HasAll(reconcile.Attributes, table, telemetry.KeyCount.Int(1)) {
		t.Fatalf("reconcile span under process: %+v", reconcile)
	}
	// The reconciliation's transaction: repo's span, with the Azure SDK's under it.
	var tx bool
	for _, c := range children(*reconcile) {
		if c.Name != "repo.transaction" {
			continue
		}
		for _, g := range children(c) {
			if g.Name == "Client.SubmitTransaction" {
				tx = true
			}
		}
	}
	if !tx {
		t.Errorf("the reconciliation's transaction is not a child of its span")
	}
	if write.SpanContext.TraceID() != reconcile.SpanContext.TraceID() {
		t.Error("write and reconcile in different traces")
	}
}
