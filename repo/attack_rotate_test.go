package repo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attack on RotateOptions.Reencrypt at its narrowest window: the rotation's transaction is
// held at the proxy after the page was read. Meanwhile a reader reads every entity, and the
// application rewrites one of them (under the new key, with new values). Released, the
// transaction meets 412; the per-entity fallback must not overwrite the application's
// write (no lost update), and every entity ends under the new key, unreadable to the old
// key with its pre-rotation metadata.
func TestAttackReencryptHeldTransactionAndConcurrentWriter(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ctx := b.ctx
	old, next := newKEK(t, "kek-compromised"), newKEK(t, "kek-fresh")
	writer := table[SecretEmployee](t, b, &repo.Options{Encryption: &codec.Encryption{Key: old}})
	var emps []*SecretEmployee
	for i := range 5 {
		emps = append(emps, secretEmployee("Sales", fmt.Sprintf("%06d", i)))
	}
	if err := writer.BulkWrite(ctx, emps, nil); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, b)
	both := &codec.Encryption{Key: next, Resolver: keyring(t, old, next)}
	rotator := table[SecretEmployee](t, b, &repo.Options{Encryption: both})
	app := table[SecretEmployee](t, b, &repo.Options{Encryption: both})

	ps := b.proxy.PauseAt("held rotation", faultproxy.IsBatch, 1)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	var res repo.RotateResult
	go func() {
		var err error
		res, err = rotator.RotateKeys(ctx, &repo.RotateOptions{Reencrypt: true})
		done <- err
	}()
	if err := ps.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	readAll(t, b, both, 5)
	cur, err := app.Get(ctx, "Sales", "000002")
	if err != nil {
		t.Fatal(err)
	}
	cur.FirstName, cur.SSN = "Changed", "999-99-9999"
	if err := app.Update(ctx, &cur, nil); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	if err := <-done; err != nil {
		t.Fatalf("rotation: %+v, %v", res, err)
	}
	got, err := table[SecretEmployee](t, b, &repo.Options{Encryption: &codec.Encryption{Key: next}}).Get(ctx, "Sales", "000002")
	if err != nil || got.FirstName != "Changed" || got.SSN != "999-99-9999" {
		t.Fatalf("the application's write during the rotation: %+v, %v", got, err)
	}
	if ids := keyIDs(t, b); ids["kek-fresh"] != 5 {
		t.Fatalf("key ids after the rotation: %v (%+v)", ids, res)
	}
	for k, e := range snapshot(t, b) {
		if k[1] == "000002" {
			continue // rewritten by the application, with its own values
		}
		if oldKeyStillReads(t, old, before[k], e) {
			t.Fatalf("%v: the old key with earlier metadata still decrypts it", k)
		}
	}
}

// Attack: the rotation process dies while its transaction is held (its context ends); the
// proxy then forwards the transaction, which lands after the client gave up. Every entity
// is readable right after, and a rerun from the start completes, finding the landed ones
// current.
func TestAttackReencryptCrashWhileTransactionInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	old, next := newKEK(t, "kek-compromised"), newKEK(t, "kek-fresh")
	writer := table[SecretEmployee](t, b, &repo.Options{Encryption: &codec.Encryption{Key: old}})
	var emps []*SecretEmployee
	for i := range 5 {
		emps = append(emps, secretEmployee("Sales", fmt.Sprintf("%06d", i)))
	}
	if err := writer.BulkWrite(b.ctx, emps, nil); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, b)
	both := &codec.Encryption{Key: next, Resolver: keyring(t, old, next)}
	rotator := table[SecretEmployee](t, b, &repo.Options{Encryption: both})
	ps := b.proxy.PauseAt("crash", faultproxy.IsBatch, 1)
	ps.Detach() // the service goes on with the transaction after the client gave up
	t.Cleanup(ps.Release)
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan error, 1)
	go func() {
		_, err := rotator.RotateKeys(ctx, &repo.RotateOptions{Reencrypt: true})
		done <- err
	}()
	if err := ps.Wait(b.ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled rotation reported success")
	}
	// Wait, with a deadline, until the proxy has forwarded the transaction and its answer
	// came back (to nobody): it has landed after the client gave up.
	idle, stop := context.WithTimeout(b.ctx, 10*time.Second)
	defer stop()
	if err := b.proxy.WaitIdle(idle); err != nil || b.proxy.Fired("crash") != 1 {
		t.Fatalf("the held transaction was not forwarded: %v (fired %d)", err, b.proxy.Fired("crash"))
	}
	if ids := keyIDs(t, b); ids["kek-fresh"] != 5 {
		t.Fatalf("key ids after the forwarded transaction: %v, want it landed on all 5", ids)
	}
	readAll(t, b, both, 5)
	res, err := rotator.RotateKeys(b.ctx, &repo.RotateOptions{Reencrypt: true})
	if err != nil || res.Reencrypted != 0 || res.Current != 5 {
		t.Fatalf("rerun: %+v, %v; want the 5 landed ones found current", res, err)
	}
	if ids := keyIDs(t, b); ids["kek-fresh"] != 5 {
		t.Fatalf("key ids: %v", ids)
	}
	for k, e := range snapshot(t, b) {
		if oldKeyStillReads(t, old, before[k], e) {
			t.Fatalf("%v: the old key with earlier metadata still decrypts it", k)
		}
	}
	_ = errors.Is
}
