package secondaryindex_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks on the one ownership rule of unique copies (copyOwner), as Verify, Backfill,
// Repair and the index-aware move's Removal use it.

// A partial unique index (its copies carry FirstName and Email, not the primary value):
// the owner is "told" by content equality. Two employees named Amy share an email in
// data older than the index. The one copy then equals both projections, so copyOwner
// calls it owned by each of them: Verify sees no Conflict and no drift although two
// entities hold one unique value, and archiving the second Amy deletes the first Amy's
// copy ("Removal never deletes another entity's copy"; DESIGN: content equality cannot
// prove that the stored state is ours). Fixed: Verify reports both as a Conflict; the
// move's deletion is kept, by decision (see below and the package documentation).
func TestAttackOwnerPartialCopyEqualToTwoProjections(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byMailPartial)
	if err := x.Insert(b.Ctx, emp(1, "Amy", "Smith", "amy@contoso.com")); err != nil {
		t.Fatal(err)
	}
	// The second Amy is older data (stored around the index), sharing the email.
	if err := b.Raw.Insert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "empid_000002",
		Properties: map[string]any{"EmployeeId": "000002", "FirstName": "Amy", "LastName": "Jones", "Age": int32(22), "Email": "amy@contoso.com"}}); err != nil {
		t.Fatal(err)
	}
	r, err := x.Verify(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("verify: %+v", r)
	if r.Conflict == 0 && r.Drift() == 0 {
		t.Errorf("verify reads Sales clean (conflict 0, drift 0) while employees 000001 and 000002 share the unique email: the copy counts as each one's")
	}
	if r.Conflict != 2 || r.Drift() != 2 {
		t.Errorf("verify: %+v, want both employees reported as a Conflict (the copy equals both projections: it proves neither's)", r)
	}
	// Decided (fold of the owner attack): the move removes a partial copy equal to the
	// archived entity's projection. Keeping it would leave every archived entity of a
	// partial unique index findable by its value; deleting it loses the other entity's
	// copy only in this state, which Verify reports as a Conflict. So the expectation
	// is not "the copy stays" but: the move leaves no copy the archived entity could be
	// found by, Verify then reports employee 000001's copy as Missing, and Repair
	// writes it back.
	a, target := b.Archiver(x)
	b.MustMove(a, target, "Sales", "empid_000002")
	if got, err := x.Lookup(b.Ctx, "Sales", "mail", "amy@contoso.com"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("after archiving employee 000002, its value still finds %+v %v", got, err)
	}
	r, err = x.Repair(b.Ctx, "Sales", nil)
	if err != nil || r.Missing != 1 || r.Conflict != 0 || r.Repaired != 1 || len(r.Samples) != 1 || r.Samples[0].RowKey != "empid_000001" {
		t.Fatalf("repair after the move: %+v %v, want employee 000001's copy Missing and written", r, err)
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "mail", "amy@contoso.com"); err != nil || got.FirstName != "Amy" {
		t.Fatalf("after the repair, lookup gives %+v %v, want employee 000001's copy", got, err)
	}
	if r, err := x.Verify(b.Ctx, "Sales", nil); err != nil || r.Drift() != 0 || r.Entities != 1 {
		t.Fatalf("verify after the repair: %+v %v, want employee 000001 alone and clean", r, err)
	}
}

// A copy names an owner that no longer holds the value (its primary was deleted around
// the package, the drift Verify and Repair exist for), while another employee now holds
// the value. copyOwner takes the name in the copy at its word: ownedByOther, so Verify
// says Conflict (not counted as drift), Repair leaves the copy, and Lookup returns an
// employee that does not exist. Drift's own definition: "Orphan: a copy that no entity
// has (the entity is gone, ...)".
func TestAttackOwnerCopyOfVanishedOwnerSquatsTheValue(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail)
	for _, e := range []*Employee{emp(3, "Cy", "Gone", "x@contoso.com"), emp(2, "Bo", "Here", "y@contoso.com")} {
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// Writes around the package: employee 3's primary is deleted (its copy stays), and
	// employee 2's email becomes x@.
	if err := b.Raw.Delete(b.Ctx, "Sales", "empid_000003", nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Raw.Upsert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "empid_000002",
		Properties: map[string]any{"Email": "x@contoso.com"}}, &repo.UpsertOptions{Mode: repo.Merge}); err != nil {
		t.Fatal(err)
	}
	r, err := x.Repair(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("repair: %+v", r)
	after, err := x.Verify(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("verify after repair: %+v", after)
	got, err := x.Lookup(b.Ctx, "Sales", "email", "x@contoso.com")
	if err != nil || got.EmployeeID != "000002" {
		t.Fatalf("after Repair, lookup of x@ gives %+v %v, want employee 000002 (employee 000003 no longer exists; verify after repair: drift %d, conflict %d)",
			got, err, after.Drift(), after.Conflict)
	}
}

// Decode errors that are not the data's fault are returned (good), but their text names
// the copy's RowKey, "ssn_" + the indexed value, and the worker logs that text (Redact
// keeps keys) on every failed delivery of a verify job: the log carries the indexed value
// that the job's own report line carefully leaves out.
func TestAttackOwnerKeyOutageLogsTheIndexedValue(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	const value = "blind7f3a9cVALUE"
	kek := &flakyKey{KeyEncryptionKey: localKey(t)}
	kek.left.Store(1 << 30)
	q, _ := b.Queue()
	tb, err := repo.New[secret](b.Clients.Tables, b.Table, &repo.Options{Encryption: &codec.Encryption{Key: kek}, Retry: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	x, err := secondaryindex.NewIntra(tb, secondaryindex.Index[secret]{Name: "id", Value: func(s *secret) string { return s.ID }},
		[]secondaryindex.Index[secret]{{Name: "ssn", Value: func(s *secret) string { return s.SSNIndex }}},
		&secondaryindex.IntraOptions{Conflict: testbed.FastRetry(), Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Insert(b.Ctx, &secret{Dept: "Sales", ID: "000001", SSN: "078-05-1120", SSNIndex: value}); err != nil {
		t.Fatal(err)
	}
	kek.left.Store(1) // the primary decrypts; the copy does not (the key holder went away)
	_, verr := x.Verify(b.Ctx, "Sales", nil)
	if verr == nil {
		t.Fatal("verify succeeded while the key holder is out of reach")
	}
	if text := errs.Redact(verr); strings.Contains(text, value) {
		t.Errorf("the verify error, as the worker logs it, carries the indexed value: %s", text)
	}

	// The same through a verify job on a worker whose log is observed.
	core, logs := observer.New(zapcore.DebugLevel)
	reg := queueworker.NewRegistry()
	if err := x.Register(reg); err != nil {
		t.Fatal(err)
	}
	w, err := queueworker.New(queueworker.Config{Queue: q.Queue(), Service: b.Clients.Queues, Registry: reg,
		Logger: zap.New(core), MaxDequeueCount: 1, Retry: testbed.FastRetry(),
		MinPollInterval: 10 * time.Millisecond, MaxPollInterval: 200 * time.Millisecond, ShutdownTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	kek.left.Store(1)
	if err := x.StartVerify(b.Ctx, "Sales"); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	for _, l := range logs.All() {
		line := l.Message
		for k, v := range l.ContextMap() {
			line += " " + k + "=" + strings.TrimSpace(strings.ReplaceAll(toString(v), "\n", " "))
		}
		if strings.Contains(line, value) {
			t.Errorf("the worker's log carries the indexed value: %s", line)
		}
	}
}

func toString(v any) string { return fmt.Sprint(v) }

// An encrypted indexed type: the copy's plaintext EmployeeId is not bound to it, so a
// writer of the table (who holds no key) rewrites employee A's ssn copy to name an
// employee that does not exist. copyOwner believes the name: Verify calls A's value a
// Conflict (no drift), and archiving A leaves the copy, so after the move a lookup still
// finds A's decrypted SSN ("an archive move of an entity then leaves no copy that a
// lookup can find").
func TestAttackOwnerEncryptedCopyRenamedToNobodySurvivesTheMove(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := secretIntra(t, b, true)
	if err := x.Insert(b.Ctx, &secret{Dept: "Sales", ID: "000001", SSN: "078-05-1120", SSNIndex: "h1"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Raw.Upsert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "ssn_h1",
		Properties: map[string]any{"EmployeeId": "999999"}}, &repo.UpsertOptions{Mode: repo.Merge}); err != nil {
		t.Fatal(err)
	}
	got, lerr := x.Lookup(b.Ctx, "Sales", "ssn", "h1")
	t.Logf("the renamed copy reads %+v %v", got, lerr)
	r, err := x.Verify(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("verify: %+v", r)
	a, target := b.Archiver(x)
	b.MustMove(a, target, "Sales", "id_000001")
	if got, err := x.Lookup(b.Ctx, "Sales", "ssn", "h1"); err == nil {
		t.Fatalf("after archiving A, its value still finds %+v (SSN decrypted: %q); verify before the move said drift %d, conflict %d",
			got, got.SSN, r.Drift(), r.Conflict)
	}
}

// The window between Removal's read of a copy (A's) and the move's transaction: held at
// the proxy while a bulk Backfill hands the copy to employee B. The transaction's delete
// of the copy is conditional on the ETag Removal read: it fails, the move starts over,
// and the copy, now B's, is kept.
func TestAttackOwnerCopyTakenOverBetweenRemovalAndTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byEmail)
	if err := x.Insert(b.Ctx, emp(1, "Ann", "Lee", "shared@contoso.com")); err != nil {
		t.Fatal(err)
	}
	direct, err := intraOn(b.Direct.Tables, b.Table, byID, []secondaryindex.Index[Employee]{byEmail}, &repo.Options{Retry: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	a, target := b.Archiver(x)
	b.MustMoveHeld(a, target, "Sales", "empid_000001", func() {
		if err := direct.Backfill(b.Ctx, []*Employee{emp(2, "Bob", "Ray", "shared@contoso.com")}); err != nil {
			t.Fatal(err)
		}
	})
	if got, err := x.Lookup(b.Ctx, "Sales", "email", "shared@contoso.com"); err != nil || got.EmployeeID != "000002" {
		t.Fatalf("B's copy after A's held move: %+v %v", got, err)
	}
}

// The window between a backfill's read of a unique copy whose owner is unknown (forged
// garbage under B's value) and its transaction: held while the copy is rewritten as
// employee C's (C holds the value too). The backfill's replace is conditional on the ETag
// it read: it fails, the round reads the copy again, finds C's, and leaves it.
func TestAttackOwnerUnknownCopyBecomesAnothersBeforeBackfillWrites(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byEmail)
	direct, err := intraOn(b.Direct.Tables, b.Table, byID, nil, &repo.Options{Retry: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []*Employee{emp(2, "Bob", "Ray", "v@contoso.com"), emp(3, "Cy", "Fox", "v@contoso.com")} {
		if err := direct.Insert(b.Ctx, e); err != nil { // data older than the email index
			t.Fatal(err)
		}
	}
	if err := b.Raw.Insert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "email_v@contoso.com",
		Properties: map[string]any{"Age": "not a number"}}); err != nil {
		t.Fatal(err)
	}
	ps := b.Proxies.Table.PauseAt("backfill transaction", faultproxy.IsBatch, 1)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	go func() {
		_, err := x.BackfillPartition(b.Ctx, "Sales", &secondaryindex.BackfillOptions{Limit: 1, PageSize: 1})
		done <- err
	}()
	testbed.WaitHeld(t, ps)
	c := emp(3, "Cy", "Fox", "v@contoso.com")
	if err := b.Raw.Upsert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "email_v@contoso.com",
		Properties: map[string]any{"EmployeeId": c.EmployeeID, "FirstName": c.FirstName, "LastName": c.LastName, "Email": c.Email}}, nil); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "email", "v@contoso.com"); err != nil || got.EmployeeID != "000003" {
		t.Fatalf("the copy after the held backfill of B: %+v %v, want C's (000003)", got, err)
	}
}

// cancelKey cancels the operation's context at its nth unwrap and answers with ctx's
// error, as a key holder client that honours ctx does when the caller goes away.
type cancelKey struct {
	codec.KeyEncryptionKey
	n      atomic.Int64
	cancel context.CancelFunc
}

func (k *cancelKey) UnwrapKey(ctx context.Context, wrapped []byte, algorithm string) ([]byte, error) {
	if k.n.Add(-1) == 0 && k.cancel != nil {
		k.cancel()
		return nil, ctx.Err()
	}
	return k.KeyEncryptionKey.UnwrapKey(ctx, wrapped, algorithm)
}

// A context cancelled while copyOwner decrypts the copy is no evidence about the copy:
// Verify and Removal must fail with the context's error, never report the copy as Stale
// or of unknown owner.
func TestAttackOwnerContextCancelledDuringCopyDecodeDecidesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	kek := &cancelKey{KeyEncryptionKey: localKey(t)}
	x := secretIntraWith(t, b, true, kek)
	if err := x.Insert(b.Ctx, &secret{Dept: "Sales", ID: "000001", SSN: "078-05-1120", SSNIndex: "h1"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Ctx)
	kek.cancel = cancel
	kek.n.Store(2) // the primary decrypts, the copy's decryption meets the cancellation
	r, err := x.Verify(ctx, "Sales", nil)
	if err == nil || !errors.Is(err, context.Canceled) || errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("verify cancelled during the copy's decode: %+v %v, want context.Canceled", r, err)
	}
	e := b.row(t, "Sales", "id_000001")
	ctx, cancel = context.WithCancel(b.Ctx)
	kek.cancel = cancel
	kek.n.Store(2) // e decrypts, the copy does not
	rm, err := x.Removal(ctx, e)
	if err == nil || !errors.Is(err, context.Canceled) || errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("removal cancelled during the copy's decode: %+v %v, want context.Canceled", rm, err)
	}
}
