package retry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// An operation with sensitive keys (set on the Op, or marked on the context by a caller
// that reads through another package) logs and returns neither its keys nor the text of
// its errors, which names them; it logs the errors' status and code. The mark reaches the
// operations nested under fn.
func TestRetryLogNeverCarriesSensitiveKeys(t *testing.T) {
	t.Parallel()
	const copyKey = "email_secret.mailbox@contoso.com"
	busy := func() error {
		return &errs.ServiceError{Op: "get", Resource: "T", PartitionKey: "Sales", RowKey: copyKey, StatusCode: 503, Code: "ServerBusy",
			Err: errors.New("GET /T(PartitionKey='Sales',RowKey='" + copyKey + "')")}
	}
	for name, run := range map[string]func(p Policy) error{
		"op": func(p Policy) error {
			return Do(context.Background(), p, Op{Name: "get", Resource: "T", PartitionKey: "Sales", RowKey: copyKey, SensitiveKeys: true},
				func(context.Context, int) error { return busy() })
		},
		"context": func(p Policy) error {
			return Do(WithSensitiveKeys(context.Background()), p, Op{Name: "get", Resource: "T", PartitionKey: "Sales", RowKey: copyKey},
				func(context.Context, int) error { return busy() })
		},
		"nested": func(p Policy) error {
			return Optimistic(context.Background(), p, Op{Name: "repair", Resource: "T", SensitiveKeys: true}, func(ctx context.Context, _ int) error {
				return Do(ctx, p, Op{Name: "get", Resource: "T", PartitionKey: "Sales", RowKey: copyKey}, func(context.Context, int) error { return busy() })
			})
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, logs := observed()
			err := run(fastPolicy(2, l))
			if !errors.Is(err, ErrTransient) {
				t.Fatalf("err = %v, want ErrTransient", err)
			}
			if strings.Contains(err.Error(), "secret.mailbox") {
				t.Errorf("the error names the key: %v", err)
			}
			entries := logs.FilterMessage("retrying").All()
			if len(entries) != 2 {
				t.Fatalf("%d retry entries, want 2", len(entries))
			}
			for _, e := range entries {
				m := e.ContextMap()
				if s := fmt.Sprint(m); strings.Contains(s, "secret.mailbox") {
					t.Errorf("a retry entry names the key: %s", s)
				}
				if m["keysWithheld"] != true || m["status"] != int64(503) || m["error"] != "503 ServerBusy" {
					t.Errorf("a retry entry: %v, want keysWithheld, status 503 and the class as error", m)
				}
			}
		})
	}
	// Without the mark the keys are logged, as before.
	l, logs := observed()
	_ = Do(context.Background(), fastPolicy(1, l), Op{Name: "get", Resource: "T", PartitionKey: "Sales", RowKey: "empid_1"},
		func(context.Context, int) error { return busy() })
	if got := logs.FilterMessage("retrying").All(); len(got) != 1 || got[0].ContextMap()["rowKey"] != "empid_1" {
		t.Fatalf("an unmarked retry entry: %v, want its rowKey", got)
	}
}
