package tablearchive

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// A writer acting just before the last check (the Timestamp query before DeleteTable),
// held exactly at the proxy: an insert, an update of an exported entity, and a delete
// paired with an insert. Each must make the job ErrTableChanged with the table kept.
func TestAttackArchiveTableWriterJustBeforeLastCheck(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	for _, tc := range []string{"insert", "update", "delete+insert"} {
		t.Run(tc, func(t *testing.T) {
			tb := b.newTable(t, "W"+strings.ReplaceAll(tc, "+", ""))
			fillTable(t, b, tb.Name(), 50, "a")
			container := testenv.ContainerName(t)
			isCheck := func(r *http.Request) bool {
				return faultproxy.IsListEntities(r) && strings.Contains(r.URL.Path, "/"+tb.Name()+"(") &&
					strings.Contains(r.URL.RawQuery, "Timestamp")
			}
			p := ps.Table.PauseAt("timestamp check "+tc, isCheck, 1)
			t.Cleanup(p.Release)
			done := make(chan error, 1)
			go func() {
				_, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: tb.Name(), Container: container, Sealed: true})
				done <- err
			}()
			if err := p.Wait(b.ctx); err != nil {
				t.Fatal(err)
			}
			var err error
			switch tc {
			case "insert":
				err = tb.Insert(b.ctx, &codec.Entity{PartitionKey: "user00", RowKey: "zz", Properties: map[string]any{"Tag": "new"}})
			case "update":
				err = tb.Update(b.ctx, &codec.Entity{PartitionKey: "user00", RowKey: "a00000", Properties: map[string]any{"Tag": "upd"}}, &repo.UpdateOptions{Unconditional: true})
			default:
				if err = tb.Delete(b.ctx, "user01", "a00001", nil); err == nil {
					err = tb.Insert(b.ctx, &codec.Entity{PartitionKey: "user01", RowKey: "a00001x", Properties: map[string]any{"Tag": "new"}})
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			p.Release()
			if err := <-done; !errors.Is(err, ErrTableChanged) {
				t.Fatalf("archive: %v, want ErrTableChanged", err)
			}
			if ok, err := tb.Exists(b.ctx); !ok || err != nil {
				t.Fatalf("table deleted (%v)", err)
			}
		})
	}
}
