package repo_test

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/internal/telemetry/telemetrytest"
	"github.com/tablepatterns/tablepatterns/repo"
)

// A key rotation is one span under the caller's, with what it did.
func TestRotateKeysSpan(t *testing.T) {
	t.Parallel()
	telemetrytest.Install()
	b := setup(t, false)
	old, next := newKEK(t, "kek-old"), newKEK(t, "kek-new")
	writer := table[SecretEmployee](t, b, &repo.Options{Encryption: &codec.Encryption{Key: old}})
	for i := range 5 {
		if err := writer.Insert(b.ctx, secretEmployee("Sales", fmt.Sprintf("%06d", i))); err != nil {
			t.Fatal(err)
		}
	}
	rotator := table[SecretEmployee](t, b, &repo.Options{Encryption: &codec.Encryption{Key: next, Resolver: keyring(t, old, next)}})
	ctx, root := otel.Tracer("test").Start(b.ctx, "test.operator")
	if _, err := rotator.RotateKeys(ctx, nil); err != nil {
		t.Fatal(err)
	}
	root.End()
	spans := telemetrytest.Find("repo.rotate_keys", telemetry.KeyTable.String(b.name))
	if len(spans) != 1 || spans[0].Parent.SpanID() != root.SpanContext().SpanID() {
		t.Fatalf("%d rotate_keys spans, or not under the caller", len(spans))
	}
	if !telemetrytest.HasAll(spans[0].Attributes, attribute.Int("tablepatterns.rewrapped", 5), attribute.Bool("tablepatterns.complete", true)) {
		t.Errorf("attributes %v", spans[0].Attributes)
	}
}

// A transaction is one span under the caller's, naming the table and the number of actions;
// a failed one records its error.
func TestTransactionSpan(t *testing.T) {
	t.Parallel()
	telemetrytest.Install()
	b := setup(t, false)
	emps := table[Employee](t, b, nil)
	ctx, root := otel.Tracer("test").Start(b.ctx, "test.caller")
	if _, err := repo.Submit(ctx, emps.InsertAction(employee("Tx", "1")), emps.InsertAction(employee("Tx", "2"))); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Submit(ctx, emps.InsertAction(employee("Tx", "1"))); err == nil {
		t.Fatal("a duplicate insert succeeded")
	}
	root.End()
	spans := telemetrytest.Find("repo.transaction", telemetry.KeyTable.String(b.name))
	if len(spans) != 2 {
		t.Fatalf("%d transaction spans, want 2", len(spans))
	}
	for _, s := range spans {
		if s.Parent.SpanID() != root.SpanContext().SpanID() {
			t.Fatal("a transaction span is not under the caller's")
		}
	}
	if !telemetrytest.HasAll(spans[0].Attributes, attribute.Int("tablepatterns.count", 2)) || spans[1].Status.Code != codes.Error {
		t.Errorf("spans %+v / %+v", spans[0].Attributes, spans[1].Status)
	}
}
