package repo_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Malformed or forged histories in the stored entity: no panic, never "applied" for a
// write that was dropped before the service.
func TestForgedHistoriesNeverReadAsApplied(t *testing.T) {
	t.Parallel()
	forged := []string{"", " ", "?", "? ?", "+", "++AAAAAAAAAAA", "+AAAAAAAAAAA", "AAAAAAAAAAA  ?", "AAAAAAAAAAA ?x",
		"AAAAAAAAAAA\tBBBBBBBBBBB", "AAAAAAAAAA\u00e9", strings.Repeat("AAAAAAAAAAA ", 2500) + "?", "+?", "?+AAAAAAAAAAA",
		"AAAAAAAAAAA +BBBBBBBBBBB +CCCCCCCCCCC", "\u2028", "AAAAAAAAAAA\u2028?"}
	b := setup(t, true)
	raw := testenv.TableService(t).NewClient(b.name)
	for i, h := range forged {
		rk := fmt.Sprint(i)
		put := func(n int) {
			body, _ := json.Marshal(map[string]any{"PartitionKey": "f", "RowKey": rk, "N": fmt.Sprint(n), "N@odata.type": "Edm.Int64", repo.DefaultWriteIDProperty: h})
			if _, err := raw.UpsertEntity(b.ctx, body, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
				t.Fatal(err)
			}
		}
		put(1)
		tbl := table[Counter](t, b, &repo.Options{TrackWrites: true, Logger: onRetry(func() { put(2) })})
		c, err := tbl.Get(b.ctx, "f", rk)
		if err != nil {
			t.Fatal(err)
		}
		b.proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropBeforeForward()})
		c.N = 50
		if err := tbl.Update(b.ctx, &c, nil); err == nil {
			t.Errorf("history %q: dropped update reported applied", h)
		}
		// An insert meeting a forged entity.
		b.proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsInsertEntity, Times: 1, Action: faultproxy.DropBeforeForward()})
		if err := tbl.Insert(b.ctx, &Counter{PK: "f", RK: rk}); err == nil {
			t.Errorf("history %q: dropped insert reported applied", h)
		}
	}
}
