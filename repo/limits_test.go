package repo_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// The service limits Azurite does not enforce (DESIGN.md "Traps") are refused by the SDK
// with a typed error naming the field, the size and the limit, and nothing is sent.
func TestEntityLimitsRefusedWithoutRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	dyn := table[codec.Entity](t, b, nil)
	ctx := b.ctx
	entity := func(props map[string]any) *codec.Entity {
		return &codec.Entity{PartitionKey: "p", RowKey: "r", Properties: props}
	}
	many := map[string]any{}
	for i := 0; i < codec.MaxProperties+1; i++ {
		many[fmt.Sprintf("P%03d", i)] = int32(i)
	}
	huge := map[string]any{}
	for i := 0; i < 17; i++ { // 17 x 64,000 bytes of binary: over 1 MiB in all
		huge[fmt.Sprintf("B%02d", i)] = make([]byte, 64000)
	}
	cases := []struct {
		name   string
		e      *codec.Entity
		limit  int
		reason string
	}{
		{"253 custom properties", entity(many), codec.MaxProperties, "properties"},
		{"property name with a dash", entity(map[string]any{"my-prop": "x"}), 0, "name"},
		{"property name over 255 chars", entity(map[string]any{"P" + string(make([]byte, 255)): "x"}), 0, "name"},
		{"binary over 64 KiB", entity(map[string]any{"Photo": make([]byte, 64<<10+1)}), codec.MaxBinaryBytes, "binary"},
		{"entity over 1 MiB", entity(huge), codec.MaxEntityBytes, "entity"},
	}
	mark := b.proxy.Count()
	for _, c := range cases {
		err := dyn.Upsert(ctx, c.e, nil)
		var ie *repo.InvalidInputError
		if !errors.As(err, &ie) {
			t.Errorf("%s: got %v, want an *InvalidInputError", c.name, err)
			continue
		}
		if ie.Field == "" || (c.limit != 0 && (ie.Limit != c.limit || ie.Size <= ie.Limit)) {
			t.Errorf("%s: the error must name the field, the size and the limit %d: %+v", c.name, c.limit, ie)
		}
	}
	if n := requestsSince(b.proxy, mark); n != 0 {
		t.Fatalf("%d requests sent for refused entities", n)
	}
}

// Retries happen in one layer: a clients from NewClients has the Azure SDK's own retry
// turned off, so one injected failure costs exactly one extra request, and a policy with
// retries off sends exactly one.
func TestOneRetryLayer(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ctx := b.ctx
	b.proxy.AddRule(faultproxy.Rule{Name: "busy-once", Match: faultproxy.IsInsertEntity, Times: 1, Action: faultproxy.Respond(503, "ServerBusy")})
	emps := table[Employee](t, b, nil)
	mark := b.proxy.Count()
	if err := emps.Insert(ctx, employee("Ops", "1")); err != nil {
		t.Fatal(err)
	}
	if n := requestsSince(b.proxy, mark); n != 2 {
		t.Fatalf("%d requests for one insert with one 503, want 2", n)
	}

	b.proxy.AddRule(faultproxy.Rule{Name: "busy-always", Match: faultproxy.IsInsertEntity, Action: faultproxy.Respond(503, "ServerBusy")})
	once := table[Employee](t, b, &repo.Options{Retry: retry.NoRetry()})
	mark = b.proxy.Count()
	err := once.Insert(ctx, employee("Ops", "2"))
	if !errors.Is(err, repo.ErrTransient) {
		t.Fatalf("insert against a busy server with retries off: %v, want ErrTransient", err)
	}
	if n := requestsSince(b.proxy, mark); n != 1 {
		t.Fatalf("%d requests with retries off, want 1: another layer retried", n)
	}
}
