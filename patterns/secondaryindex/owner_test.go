package secondaryindex_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// One rule decides who owns a unique copy, for Verify, BackfillPartition, Repair and
// Removal alike. An entity type with encrypted fields: employee A holds the blind-index
// value "h1" and its copy; employee B, stored before the index (data older than it),
// holds "h1" too. The copy decrypts and names A as its owner, so every operation must
// see it as A's: Verify reports B's value as a Conflict (not clean), Backfill and Repair
// leave the copy with A, and an archive move of A removes it while one of B leaves it.
// (Before one rule decided, Verify and Backfill gave up on encrypted types: Verify read B
// as clean, Backfill handed the copy to B and back, and Removal called it A's.)
func TestAttackIntraEncryptedUniqueCopyOneOwnerRule(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	old, x := secretIntra(t, b, false), secretIntra(t, b, true)
	if err := x.Insert(b.Ctx, &secret{Dept: "Sales", ID: "000001", SSN: "078-05-1120", SSNIndex: "h1"}); err != nil {
		t.Fatal(err)
	}
	if err := old.Insert(b.Ctx, &secret{Dept: "Sales", ID: "000002", SSN: "219-09-9999", SSNIndex: "h1"}); err != nil {
		t.Fatal(err)
	}
	owner := func(when string) {
		t.Helper()
		got, err := x.Lookup(b.Ctx, "Sales", "ssn", "h1")
		if err != nil || got.ID != "000001" || got.SSN != "078-05-1120" {
			t.Fatalf("%s: the copy of h1 reads %+v %v, want A's (000001)", when, got, err)
		}
	}

	r, err := x.Verify(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Conflict != 1 || len(r.Samples) != 1 || r.Samples[0].Drift != secondaryindex.Conflict || r.Samples[0].RowKey != "id_000002" {
		t.Fatalf("verify: %+v, want one Conflict for B (id_000002): B's value is held by A's copy", r)
	}

	cp, err := x.BackfillPartition(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	owner("after the backfill")
	if cp.Written != 1 {
		t.Fatalf("backfill wrote %d entities, want 1 (A rewritten; B left: its value is A's)", cp.Written)
	}
	if _, err := x.Repair(b.Ctx, "Sales", nil); err != nil {
		t.Fatal(err)
	}
	owner("after the repair")

	removal := func(rk string) int {
		t.Helper()
		rm, err := x.Removal(b.Ctx, b.row(t, "Sales", rk))
		if err != nil {
			t.Fatalf("removal of %s: %v", rk, err)
		}
		return len(rm.Actions)
	}
	if n := removal("id_000001"); n != 1 {
		t.Fatalf("a move of A removes %d copies, want 1 (its own h1 copy)", n)
	}
	if n := removal("id_000002"); n != 0 {
		t.Fatalf("a move of B removes %d copies, want 0 (the h1 copy is A's)", n)
	}
}

// A Repair that leaves a unique copy held by another entity says so as a repair, not as
// a backfill: two employees share an email in data older than the indexes; the backfill
// gives the copy to one and logs that it left it for the other; the other's copy in a
// second index, deleted by hand, is Missing, so Repair rewrites that employee and logs
// that it left the email copy once more.
func TestIntraRepairLogsItsOwnName(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	old := b.intra(t)
	for _, e := range []*Employee{emp(1, "Ann", "Lee", "same@contoso.com"), emp(2, "Bob", "Ray", "same@contoso.com")} {
		if err := old.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	core, logs := observer.New(zap.WarnLevel)
	x := b.intraLogged(t, zap.New(core), nil, byEmail, byLast)
	left := func(op string) {
		t.Helper()
		got := logs.TakeAll()
		if len(got) != 1 || got[0].Message != "secondaryindex: "+op+" left a unique copy held by another entity (Verify reports it as a conflict)" {
			t.Fatalf("%s logged %v, want one line saying the %s left a unique copy", op, got, op)
		}
	}
	if _, err := x.BackfillPartition(b.Ctx, "Sales", nil); err != nil {
		t.Fatal(err)
	}
	left("backfill")
	r, err := x.Verify(b.Ctx, "Sales", nil)
	// The Conflict is the only drift (Conflicts count in Drift since the owner-rule fold).
	if err != nil || r.Conflict != 1 || r.Drift() != 1 {
		t.Fatalf("verify: %+v %v, want one Conflict and no other drift", r, err)
	}
	loser := r.Samples[0].RowKey
	lasts, err := b.Raw.Collect(b.Ctx, repo.Query{Filter: filter.RowKeyPrefix("Sales", "last_")})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range lasts {
		if "empid_"+c.Properties["EmployeeId"].(string) == loser {
			if err := b.Raw.Delete(b.Ctx, "Sales", c.RowKey, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if r, err := x.Repair(b.Ctx, "Sales", nil); err != nil || r.Missing != 1 || r.Repaired != 1 {
		t.Fatalf("repair: %+v %v, want the missing copy of %s written", r, err, loser)
	}
	left("repair")
}

// secret is an employee whose SSN is encrypted and indexed through a blind index (a
// plain field, SSNIndex).
type secret struct {
	Dept     string `table:",pk"`
	RK       string `table:",rk"`
	ID       string `table:"EmployeeId"`
	SSN      string `table:"SSN,encrypt"`
	SSNIndex string `table:"SSNIndex"`
	ETag     string `table:",etag"`
}

// secretIntra builds on b's table an Intra of secrets by id, with the unique index
// "ssn" (by SSNIndex) when withSSN, every one under the same local encryption key.
func secretIntra(t *testing.T, b *bed, withSSN bool) *secondaryindex.Intra[secret] {
	t.Helper()
	return secretIntraWith(t, b, withSSN, localKey(t))
}

// localKey is the local key-encryption key of the secrets.
func localKey(t *testing.T) codec.KeyEncryptionKey {
	t.Helper()
	key, err := codec.NewLocalKey("k1", make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// secretIntraWith is secretIntra under the key-encryption key kek.
func secretIntraWith(t *testing.T, b *bed, withSSN bool, kek codec.KeyEncryptionKey) *secondaryindex.Intra[secret] {
	t.Helper()
	opts := &repo.Options{Encryption: &codec.Encryption{Key: kek}, Retry: testbed.FastRetry()}
	byID := secondaryindex.Index[secret]{Name: "id", Value: func(s *secret) string { return s.ID }}
	var more []secondaryindex.Index[secret]
	if withSSN {
		more = append(more, secondaryindex.Index[secret]{Name: "ssn", Value: func(s *secret) string { return s.SSNIndex }})
	}
	x, err := intraOn(b.Clients.Tables, b.Table, byID, more, opts)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// flakyKey is a key-encryption key whose holder stops answering once it unwrapped
// `left` content keys (a key vault out of reach).
type flakyKey struct {
	codec.KeyEncryptionKey
	left atomic.Int64
}

func (k *flakyKey) UnwrapKey(ctx context.Context, wrapped []byte, algorithm string) ([]byte, error) {
	if k.left.Add(-1) < 0 {
		return nil, errors.New("key vault unreachable")
	}
	return k.KeyEncryptionKey.UnwrapKey(ctx, wrapped, algorithm)
}

// Attack on "a unique copy whose owner cannot be proven is never taken over": the copy
// of employee A's value cannot be decrypted because the key holder is out of reach, not
// because the copy is bad. A backfill of employee B (who shares A's value in data older
// than the index) reads B, then A's copy, whose decryption fails: that failure decides
// nothing (it is no evidence about the copy), so the backfill fails and leaves the copy
// with A, and so do Verify and an archive move's Removal, instead of reading the copy as
// one of unknown owner (which a backfill rewrites, and Verify reports as Stale).
func TestAttackIntraKeyHolderOutageDecidesNoOwner(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	kek := &flakyKey{KeyEncryptionKey: localKey(t)}
	kek.left.Store(1 << 30)
	old, x := secretIntraWith(t, b, false, kek), secretIntraWith(t, b, true, kek)
	if err := x.Insert(b.Ctx, &secret{Dept: "Sales", ID: "000001", SSN: "078-05-1120", SSNIndex: "h1"}); err != nil {
		t.Fatal(err)
	}
	if err := old.Insert(b.Ctx, &secret{Dept: "Sales", ID: "000002", SSN: "219-09-9999", SSNIndex: "h1"}); err != nil {
		t.Fatal(err)
	}
	kek.left.Store(1) // B's primary copy decrypts; A's ssn copy does not
	cp, err := x.BackfillPartition(b.Ctx, "Sales", &secondaryindex.BackfillOptions{After: "id_000001"})
	if err == nil || errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("backfill of B while the key holder is out of reach: %+v %v, want its error (not a decision, not ErrInvalidInput)", cp, err)
	}
	kek.left.Store(2) // the primaries decrypt; the copy does not
	if r, err := x.Verify(b.Ctx, "Sales", nil); err == nil {
		t.Errorf("verify while the key holder is out of reach: %+v, want its error", r)
	}
	e := b.row(t, "Sales", "id_000002")
	kek.left.Store(1) // B decrypts; the copy does not
	if rm, err := x.Removal(b.Ctx, e); err == nil || errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("removal of B while the key holder is out of reach: %+v %v, want its error", rm, err)
	}
	kek.left.Store(1 << 30)
	got, err := x.Lookup(b.Ctx, "Sales", "ssn", "h1")
	if err != nil || got.ID != "000001" {
		t.Fatalf("the copy of h1 reads %+v %v, want A's (000001): an unreadable copy was taken over", got, err)
	}
}
