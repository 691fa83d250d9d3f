package consistency

import (
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The single move with a companion copy in the entity's partition: the response of its
// k-th table request (target read, source read, the companion's read, the copy, the
// delete transaction) is lost after the service applied it, for every k. The move ends
// moved or already archived, the entity and its copy row gone, the archive holding the
// entity's version, and After run at least once.
func TestAttackAmovesEntityDropEveryStep(t *testing.T) {
	t.Parallel()
	for k := 1; k <= 10; k++ {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			t.Parallel()
			b := setupCompanion(t, nil)
			b.insertWithCopy(t, "000001")
			src, err := b.current.Get(b.ctx, "Sales", "000001")
			if err != nil {
				t.Fatal(err)
			}
			var n atomic.Int32
			b.ps.Table.AddRule(faultproxy.Rule{Name: "lost", Match: func(*http.Request) bool { return n.Add(1) == int32(k) }, Action: faultproxy.DropAfterForward()})
			out, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", "000001"))
			if err != nil || (out != OutcomeMoved && out != OutcomeAlreadyArchived) {
				t.Fatalf("move (request %d lost): %v %v", k, out, err)
			}
			for _, rk := range []string{"000001", "copy-000001"} {
				if _, err := b.current.Get(b.ctx, "Sales", rk); !errors.Is(err, repo.ErrNotFound) {
					t.Fatalf("%s still in the source: %v", rk, err)
				}
			}
			cp, err := b.archive.Get(b.ctx, "Sales", "000001")
			if err != nil || cp.Properties[SourceETagProperty] != src.ETag {
				t.Fatalf("archive copy: %v %v", cp.Properties[SourceETagProperty], err)
			}
			if b.sib.afts.Load() == 0 {
				t.Fatalf("After never ran (outcome %v)", out)
			}
		})
	}
}
