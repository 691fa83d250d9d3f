package migrate

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestAbandonedUpdateOrDeleteWithoutETagNeverLandsOverANewerVersion: an Update or a
// Delete the application made unconditional (no ETag), not only an Upsert, is abandoned
// with its request held; the application then writes a newer version, acknowledged;
// only then does the service apply the abandoned request. It meets the condition of a
// row that changed and is refused: the reader reads the newer version, in the old layout
// (DualWrite) and in the copy that stands alone (CleanUp).
func TestAbandonedUpdateOrDeleteWithoutETagNeverLandsOverANewerVersion(t *testing.T) {
	t.Parallel()
	for _, stage := range []Stage{DualWrite, CleanUp} {
		for _, o := range []string{"update", "delete"} {
			t.Run(string(stage)+"/"+o, func(t *testing.T) {
				t.Parallel()
				f := setup(t, false, true)
				keys, _ := f.planned(t, 6, 1)
				f.advanceTo(t, stage)
				f.settled(t)
				ctx, k := f.b.Ctx, keys[3]
				table, method := f.src.Name(), http.MethodPut
				if stage == CleanUp {
					table = f.tgt.Name()
					// At CleanUp the write first finishes the entity: hold the copy's write.
					if err := f.m.finish(ctx, k[0], k[1]); err != nil {
						t.Fatal(err)
					}
				}
				if o == "delete" {
					method = http.MethodDelete
				}
				l := holdFirst(t, f.b.Proxy(), func(r *http.Request) bool {
					return r.Method == method && onTable(table)(r) && strings.Contains(r.URL.Path, k[1])
				})
				l.abandon(t, ctx, func(ctx context.Context) error {
					if o == "delete" {
						return f.m.Delete(ctx, k[0], k[1], nil)
					}
					return f.m.Update(ctx, &Employee{Department: k[0], EmployeeID: k[1], Name: "n", Seq: 5})
				})
				if err := f.m.Upsert(ctx, &Employee{Department: k[0], EmployeeID: k[1], Name: "n", Seq: 6}); err != nil {
					t.Fatalf("write of Seq 6: %v", err)
				}
				l.land(t, ctx)
				if v, err := f.m.Get(ctx, k[0], k[1]); err != nil || v.Seq != 6 {
					t.Errorf("Get once the abandoned %s landed = Seq %d, %v; want 6", o, v.Seq, err)
				}
			})
		}
	}
}
