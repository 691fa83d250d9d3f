package secondaryindex_test

import (
	"slices"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// Attacks "an Intra Update or Upsert without an ETag reads and writes again" after a
// transaction whose outcome repo cannot prove, on Upsert's first write (the entity does
// not exist yet, so Upsert takes the insert plan): the transaction lands, its response
// is lost, repo's retry meets 409 and answers ErrOutcomeUnknown. Upsert without an ETag
// must decide again from a fresh read (the entity exists: rewrite it) and succeed.
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
	if err != nil {
		t.Fatalf("Upsert without an ETag after a lost response that landed: %v, want nil (re-read and write again)", err)
	}
}
