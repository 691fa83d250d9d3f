package secondaryindex_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Upsert's first write (the entity does not exist yet, so Upsert takes the insert plan):
// the transaction lands, its response is lost, repo's retry meets 409 and answers
// ErrOutcomeUnknown. The entity found by a re-read may be this call's or another
// writer's, so Upsert must not write again on that guess: it answers ErrOutcomeUnknown,
// and the copies are the ones it wrote once.
func TestAttackIntraUpsertNewEntityLostResponse(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byEmail, byLast)
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	e := emp(31, "Uma", "Ups", "uma@contoso.com")
	err := x.Upsert(b.Ctx, e)
	if n := b.Proxies.Table.Fired("lost"); n != 1 {
		t.Fatalf("lost fired %d times", n)
	}
	want := []string{"email_uma@contoso.com", "empid_000031", "last_" + interKey("Ups", "000031")}
	if got := b.rows(t, "Sales"); !slices.Equal(got, want) {
		t.Fatalf("rows %q, want %q", got, want)
	}
	if !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("Upsert without an ETag after a lost response that landed: %v, want ErrOutcomeUnknown", err)
	}
}
