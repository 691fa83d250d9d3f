package repo_test

import (
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"

	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/internal/telemetry/telemetrytest"
	"github.com/tablepatterns/tablepatterns/repo"
)

// A transaction refused by the service records the refusal's class on its span (status
// and code), never the error's text: that text names the failed action's keys, and a
// span's attributes never carry keys or values.
func TestTransactionSpanNeverCarriesActionKeys(t *testing.T) {
	t.Parallel()
	telemetrytest.Install()
	b := setup(t, false)
	emps := table[Employee](t, b, nil)
	const pk, rk = "Tx-secret-partition", "secret-rowkey-4711"
	if _, err := repo.Submit(b.ctx, emps.InsertAction(employee(pk, rk))); err != nil {
		t.Fatal(err)
	}
	_, err := repo.Submit(b.ctx, emps.InsertAction(employee(pk, rk)))
	if !errors.Is(err, repo.ErrAlreadyExists) {
		t.Fatalf("a duplicate insert: %v, want ErrAlreadyExists", err)
	}
	spans := telemetrytest.Find("repo.transaction", telemetry.KeyTable.String(b.name))
	if len(spans) != 2 {
		t.Fatalf("%d transaction spans, want 2", len(spans))
	}
	failed := 0
	for _, s := range spans {
		if s.Status.Code == codes.Error {
			failed++
			if s.Status.Description == "" {
				t.Error("the failed transaction's status has no description: its class is lost")
			}
		}
		for _, secret := range []string{pk, rk} {
			if where := telemetrytest.Mentions(s, secret); where != "" {
				t.Errorf("the transaction span carries %q in its %s", secret, where)
			}
		}
	}
	if failed != 1 {
		t.Fatalf("%d failed transaction spans, want 1", failed)
	}
}

// A failed action's error names the action by its index; its keys are in the fields only
// (the row may be an index copy whose key holds the indexed value).
func TestActionErrorTextNeverNamesKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	emps := table[Employee](t, b, nil)
	const pk, rk = "Tx-key-partition", "key-rowkey-0815"
	if err := emps.Insert(b.ctx, employee(pk, rk)); err != nil {
		t.Fatal(err)
	}
	_, err := repo.Submit(b.ctx, emps.InsertAction(employee(pk, "other")), emps.InsertAction(employee(pk, rk)))
	var ae *repo.ActionError
	if !errors.As(err, &ae) || ae.Index != 1 || ae.RowKey != rk || ae.PartitionKey != pk {
		t.Fatalf("the refused transaction: %v, want an *ActionError for action 1 with its keys", err)
	}
	if text := err.Error(); strings.Contains(text, rk) || strings.Contains(text, pk) || !strings.Contains(text, "action 1") {
		t.Fatalf("the error's text: %q, want the action's index and no key", text)
	}
}
