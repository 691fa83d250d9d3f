package repo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// snapshot reads every stored entity as the service holds it, by keys.
func snapshot(t *testing.T, b *bed) map[[2]string]codec.Entity {
	t.Helper()
	all, err := table[codec.Entity](t, b, nil).Collect(b.ctx, repo.Query{})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[[2]string]codec.Entity, len(all))
	for _, e := range all {
		out[[2]string{e.PartitionKey, e.RowKey}] = e
	}
	return out
}

// oldKeyStillReads plays someone who holds the compromised
// old key-encryption key and an earlier copy of an entity's metadata (a backup, an
// earlier read). He puts that metadata next to the entity's current ciphertexts and
// decrypts with the old key. It reports whether he reads the current SSN.
func oldKeyStillReads(t *testing.T, oldKey codec.KeyEncryptionKey, earlier, current codec.Entity) bool {
	t.Helper()
	forged := codec.Entity{PartitionKey: current.PartitionKey, RowKey: current.RowKey, Properties: map[string]any{}}
	for k, v := range current.Properties {
		forged.Properties[k] = v
	}
	forged.Properties[codec.EncryptionMetadataProperty] = earlier.Properties[codec.EncryptionMetadataProperty]
	body, err := codec.EncodeEntity(&forged)
	if err != nil {
		t.Fatal(err)
	}
	c, err := codec.For[SecretEmployee]()
	if err != nil {
		t.Fatal(err)
	}
	ec, err := c.WithEncryption(&codec.Encryption{Key: oldKey})
	if err != nil {
		t.Fatal(err)
	}
	var got SecretEmployee
	err = ec.Decode(body, &got)
	if err != nil && !errors.Is(err, codec.ErrTampered) {
		t.Fatalf("the attack failed for another reason than authentication: %v", err)
	}
	return err == nil && got.SSN == secretEmployee(got.Department, got.EmployeeID).SSN
}

// Re-wrapping (the default) keeps the content keys: the old key with earlier metadata
// still decrypts the current data. This is what RotateOptions.Reencrypt is for.
func TestRotateKeysRewrapLeavesDataReadableToTheOldKey(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	old, next := newKEK(t, "kek-compromised"), newKEK(t, "kek-fresh")
	writer := table[SecretEmployee](t, b, &repo.Options{Encryption: &codec.Encryption{Key: old}})
	if err := writer.Insert(b.ctx, secretEmployee("Sales", "000123")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, b)
	rotator := table[SecretEmployee](t, b, &repo.Options{Encryption: &codec.Encryption{Key: next, Resolver: keyring(t, old, next)}})
	if res, err := rotator.RotateKeys(b.ctx, nil); err != nil || res.Rewrapped != 1 {
		t.Fatalf("rewrap: %+v, %v", res, err)
	}
	k := [2]string{"Sales", "000123"}
	if !oldKeyStillReads(t, old, before[k], snapshot(t, b)[k]) {
		t.Fatal("after a re-wrap the old key no longer reads the data: the documented limit of re-wrapping changed")
	}
}

// A re-encrypting rotation gives every entity a fresh content key and new
// ciphertexts, so the old key with pre-rotation metadata decrypts nothing; it stops and
// resumes, survives a lost transaction response, and every entity stays readable at every
// moment; plaintext properties are untouched.
func TestRotateKeysReencryptDefeatsTheOldKey(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ctx := b.ctx
	old, next := newKEK(t, "kek-compromised"), newKEK(t, "kek-fresh")
	writer := table[SecretEmployee](t, b, &repo.Options{Encryption: &codec.Encryption{Key: old}})
	const perDept = 30
	var emps []*SecretEmployee
	for _, dept := range []string{"Finance", "Marketing", "Sales"} {
		for i := range perDept {
			e := secretEmployee(dept, fmt.Sprintf("%06d", i))
			if i%7 == 0 {
				e.HireDate = time.Time{} // absent: fewer encrypted properties
			}
			emps = append(emps, e)
		}
	}
	if err := writer.BulkWrite(ctx, emps, nil); err != nil {
		t.Fatal(err)
	}
	depts := table[Dept](t, b, nil)
	if err := depts.Insert(ctx, &Dept{Name: "Sales", ID: "DEPARTMENT", Head: "Jones"}); err != nil {
		t.Fatal(err)
	}
	total := 3 * perDept
	before := snapshot(t, b)
	both := &codec.Encryption{Key: next, Resolver: keyring(t, old, next)}
	rotator := table[SecretEmployee](t, b, &repo.Options{Encryption: both})

	// A reader checks every entity again and again while the rotation runs.
	stop := make(chan struct{})
	var loops atomic.Int32
	var readerErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		reader := table[SecretEmployee](t, b, &repo.Options{Encryption: both})
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, dept := range []string{"Finance", "Marketing", "Sales"} {
				got, err := reader.Collect(context.WithoutCancel(ctx), repo.Query{Filter: filter.RowKeyPrefix(dept, "0")})
				if err == nil && len(got) != perDept {
					err = fmt.Errorf("%s: %d employees", dept, len(got))
				}
				for _, e := range got {
					if w := secretEmployee(e.Department, e.EmployeeID); err == nil && (e.SSN != w.SSN || e.Salary != w.Salary) {
						err = fmt.Errorf("read %+v", e)
					}
				}
				if err != nil {
					readerErr = err
					return
				}
			}
			loops.Add(1)
		}
	}()
	stopReader := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopReader()

	// Run 1 stops after its first page (a crash after the page was saved).
	errStop := errors.New("process stopped")
	res1, err := rotator.RotateKeys(ctx, &repo.RotateOptions{Reencrypt: true, PageSize: 40,
		OnPage: func(string, repo.RotateResult) error { return errStop }})
	if !errors.Is(err, errStop) || res1.Token == "" || res1.Reencrypted != 40 || res1.Rewrapped != 0 {
		t.Fatalf("run 1: %+v, %v", res1, err)
	}
	readAll(t, b, both, total)
	if ids := keyIDs(t, b); ids["kek-fresh"] != 40 || ids["kek-compromised"] != total-40 {
		t.Fatalf("after run 1: %v", ids)
	}

	// Run 2 resumes; the answer of its first transaction is lost after it was applied.
	b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	res2, err := rotator.RotateKeys(ctx, &repo.RotateOptions{Reencrypt: true, PageSize: 40, Token: res1.Token,
		OnPage: func(string, repo.RotateResult) error { readAll(t, b, both, total); return nil }})
	if err != nil || res2.Token != "" || b.proxy.Fired("lost") != 1 {
		t.Fatalf("run 2: %+v, %v (fired %d)", res2, err, b.proxy.Fired("lost"))
	}
	if n := res1.Reencrypted + res2.Reencrypted + res2.Current; n != total || res2.Unencrypted != 1 {
		t.Fatalf("runs 1 and 2 report %+v and %+v: want %d entities re-encrypted or found current", res1, res2, total)
	}
	if ids := keyIDs(t, b); ids["kek-fresh"] != total || ids[""] != 1 {
		t.Fatalf("after run 2: %v", ids)
	}
	stopReader()
	if readerErr != nil {
		t.Fatalf("a concurrent read failed during the rotation: %v", readerErr)
	}
	if loops.Load() == 0 {
		t.Fatal("the concurrent reader never completed a pass")
	}

	// The old key with the pre-rotation metadata reads nothing; the new key alone reads all.
	after := snapshot(t, b)
	for k, e := range after {
		if _, encrypted := e.Properties[codec.EncryptionMetadataProperty]; !encrypted {
			continue
		}
		if oldKeyStillReads(t, old, before[k], e) {
			t.Fatalf("%v: the old key with earlier metadata still decrypts the re-encrypted entity", k)
		}
		for name, v := range before[k].Properties {
			if name == codec.EncryptionMetadataProperty || name == "SSN" || name == "Salary" || name == "HireDate" {
				if fmt.Sprint(v) == fmt.Sprint(e.Properties[name]) {
					t.Fatalf("%v: %s was not rewritten", k, name)
				}
				continue
			}
			if fmt.Sprint(v) != fmt.Sprint(e.Properties[name]) {
				t.Fatalf("%v: plaintext property %s changed: %v -> %v", k, name, v, e.Properties[name])
			}
		}
	}
	readAll(t, b, &codec.Encryption{Key: next}, total)

	// A rerun from the start finds everything current.
	res3, err := rotator.RotateKeys(ctx, &repo.RotateOptions{Reencrypt: true})
	if err != nil || res3.Reencrypted != 0 || res3.Current != total || res3.Unencrypted != 1 {
		t.Fatalf("rerun: %+v, %v", res3, err)
	}
}

// RotateOptions.Reencrypt at its narrowest window: the rotation's transaction is
// held at the proxy after the page was read. Meanwhile a reader reads every entity, and the
// application rewrites one of them (under the new key, with new values). Released, the
// transaction meets 412; the per-entity fallback must not overwrite the application's
// write (no lost update), and every entity ends under the new key, unreadable to the old
// key with its pre-rotation metadata.
func TestReencryptHeldTransactionNeverOverwritesAConcurrentWriter(t *testing.T) {
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

// The rotation process dies while its transaction is held (its context ends); the
// proxy then forwards the transaction, which lands after the client gave up. Every entity
// is readable right after, and a rerun from the start completes, finding the landed ones
// current.
func TestReencryptRerunCompletesAfterACrashWithATransactionInFlight(t *testing.T) {
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
	// Wait until the proxy has forwarded the transaction and its answer came back (to
	// nobody): it has landed after the client gave up. One never answered hangs until go
	// test -timeout.
	if err := b.proxy.WaitIdle(b.ctx); err != nil || b.proxy.Fired("crash") != 1 {
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
