package repo_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// SecretEmployee is the guide's employee with its sensitive properties encrypted.
type SecretEmployee struct {
	Department string    `table:",pk"`
	EmployeeID string    `table:",rk"`
	FirstName  string    `table:"FirstName"`
	LastName   string    `table:"LastName"`
	SSN        string    `table:"SSN,encrypt"`
	Salary     int64     `table:"Salary,encrypt"`
	HireDate   time.Time `table:"HireDate,encrypt,omitempty"`
	ETag       string    `table:",etag"`
}

func secretEmployee(dept, id string) *SecretEmployee {
	return &SecretEmployee{Department: dept, EmployeeID: id, FirstName: "Jun", LastName: "Cao",
		SSN: "123-45-" + id[len(id)-4:], Salary: 81_000 + int64(len(id)), HireDate: time.Date(2012, 4, 1, 9, 30, 0, 0, time.UTC)}
}

func newKEK(t testing.TB, id string) *codec.LocalKey {
	t.Helper()
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	k, err := codec.NewLocalKey(id, b)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func keyring(t testing.TB, keys ...codec.KeyEncryptionKey) *codec.Keyring {
	t.Helper()
	r, err := codec.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// rawJSON reads the stored entity as the service holds it.
func rawJSON(t testing.TB, b *bed, pk, rk string) string {
	t.Helper()
	resp, err := testenv.TableService(t).NewClient(b.name).GetEntity(b.ctx, pk, rk, nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(resp.Value)
}

func TestEncryptedEntitiesRoundTripThroughEveryWritePath(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := &codec.Encryption{Key: newKEK(t, "kek-1")}
	emps := table[SecretEmployee](t, b, &repo.Options{Encryption: x})
	ctx := b.ctx

	// Insert, Get.
	e := secretEmployee("Sales", "000123")
	if err := emps.Insert(ctx, e); err != nil {
		t.Fatal(err)
	}
	stored := rawJSON(t, b, "Sales", "000123")
	for _, secret := range []string{e.SSN, "81006", "2012-04-01"} {
		if strings.Contains(stored, secret) {
			t.Fatalf("the service holds %q in plaintext: %s", secret, stored)
		}
	}
	if !strings.Contains(stored, `"FirstName":"Jun"`) || !strings.Contains(stored, codec.EncryptionMetadataProperty) {
		t.Fatalf("stored entity: %s", stored)
	}
	got, err := emps.Get(ctx, "Sales", "000123")
	if err != nil || got.SSN != e.SSN || got.Salary != e.Salary || !got.HireDate.Equal(e.HireDate) || got.ETag == "" {
		t.Fatalf("get: %+v, %v", got, err)
	}

	// Update (conditional, replace) and Upsert (replace).
	got.Salary = 90_000
	if err := emps.Update(ctx, &got, nil); err != nil {
		t.Fatal(err)
	}
	got.SSN = "999-99-9999"
	if err := emps.Upsert(ctx, &got, nil); err != nil {
		t.Fatal(err)
	}

	// Transactions and bulk writes.
	if _, err := repo.Submit(ctx, emps.InsertAction(secretEmployee("Sales", "000124")),
		emps.UpsertAction(secretEmployee("Sales", "000125"), nil)); err != nil {
		t.Fatal(err)
	}
	var bulk []*SecretEmployee
	for i := range 150 {
		bulk = append(bulk, secretEmployee([]string{"Marketing", "Finance"}[i%2], fmt.Sprintf("%06d", 1000+i)))
	}
	if err := emps.BulkWrite(ctx, bulk, nil); err != nil {
		t.Fatal(err)
	}

	// Queries decrypt every entity.
	all, err := emps.Collect(ctx, repo.Query{})
	if err != nil || len(all) != 153 {
		t.Fatalf("query: %d entities, %v", len(all), err)
	}
	for _, v := range all {
		want := secretEmployee(v.Department, v.EmployeeID)
		if v.EmployeeID == "000123" {
			want.SSN, want.Salary = "999-99-9999", 90_000
		}
		if v.SSN != want.SSN || v.Salary != want.Salary || !v.HireDate.Equal(want.HireDate) {
			t.Fatalf("queried %+v, want %+v", v, want)
		}
	}

	// A projection that reads an encrypted property fetches the metadata too.
	type ssnOnly struct {
		Department string `table:",pk"`
		EmployeeID string `table:",rk"`
		SSN        string `table:"SSN,encrypt"`
	}
	proj, err := repo.Project[ssnOnly](emps)
	if err != nil {
		t.Fatal(err)
	}
	ssns, err := proj.Collect(ctx, repo.Query{Filter: filter.PartitionKey("Sales")})
	if err != nil || len(ssns) != 3 || ssns[0].SSN != "999-99-9999" {
		t.Fatalf("projection: %+v, %v", ssns, err)
	}
}

func TestMergeOfEncryptedEntityIsRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	emps := table[SecretEmployee](t, b, &repo.Options{Encryption: &codec.Encryption{Key: newKEK(t, "kek-1")}})
	ctx := b.ctx
	e := secretEmployee("Sales", "000123")
	if err := emps.Insert(ctx, e); err != nil {
		t.Fatal(err)
	}
	mark := b.proxy.Count()
	merge := &repo.UpsertOptions{Mode: repo.Merge}
	checks := map[string]error{
		"upsert merge":           emps.Upsert(ctx, e, merge),
		"update merge":           emps.Update(ctx, e, &repo.UpdateOptions{Mode: repo.Merge}),
		"update of one property": emps.Update(ctx, e, &repo.UpdateOptions{Mode: repo.Merge, Properties: []string{"LastName"}}),
		"merge action":           submitErr(ctx, emps.UpsertAction(e, merge)),
		"bulk merge":             emps.BulkWrite(ctx, []*SecretEmployee{secretEmployee("Sales", "000200")}, &repo.BulkOptions{Mode: repo.BulkMerge}),
	}
	for name, err := range checks {
		var ie *repo.InvalidInputError
		if !errors.Is(err, repo.ErrInvalidInput) || !errors.As(err, &ie) || !strings.Contains(ie.Error(), "merge") {
			t.Errorf("%s: %v, want an *InvalidInputError about merges", name, err)
		}
	}
	if n := requestsSince(b.proxy, mark); n != 0 {
		t.Fatalf("%d requests sent for refused merges", n)
	}
	// Upsert in Replace mode is a whole write: allowed.
	e.LastName = "Kwok"
	if err := emps.Upsert(ctx, e, nil); err != nil {
		t.Fatal(err)
	}
}

func submitErr(ctx context.Context, actions ...repo.Action) error {
	_, err := repo.Submit(ctx, actions...)
	return err
}

func TestEncryptedTypeNeedsEncryption(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	if _, err := repo.New[SecretEmployee](b.clients.Tables, b.name, nil); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("New of an encrypted type without Encryption: %v", err)
	}
	plain := table[Employee](t, b, nil)
	if _, err := repo.OfType[SecretEmployee](plain); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("OfType to an encrypted type without Encryption: %v", err)
	}
	if _, err := repo.New[SecretEmployee](b.clients.Tables, b.name, &repo.Options{Encryption: &codec.Encryption{}}); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("New with an empty Encryption: %v", err)
	}
}

// Every way decryption can fail is typed, and loses nothing: the stored entity keeps its
// content and ETag, and the right configuration still reads it.
func TestDecryptionFailuresOnTheServiceLoseNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	k1 := newKEK(t, "kek-1")
	emps := table[SecretEmployee](t, b, &repo.Options{Encryption: &codec.Encryption{Key: k1}})
	ctx := b.ctx
	for _, id := range []string{"000001", "000002", "000003"} {
		if err := emps.Insert(ctx, secretEmployee("Sales", id)); err != nil {
			t.Fatal(err)
		}
	}
	// Someone with the storage key (not the encryption key) moves a ciphertext from one
	// entity to another, and strips the metadata of a third.
	raw := table[codec.Entity](t, b, &repo.Options{Encryption: &codec.Encryption{Key: k1}})
	e1, _ := raw.Get(ctx, "Sales", "000001")
	e2, _ := raw.Get(ctx, "Sales", "000002")
	e2.Properties["SSN"] = e1.Properties["SSN"]
	if err := raw.Upsert(ctx, &e2, nil); err != nil {
		t.Fatal(err)
	}
	e3, _ := raw.Get(ctx, "Sales", "000003")
	delete(e3.Properties, codec.EncryptionMetadataProperty)
	if err := raw.Upsert(ctx, &e3, nil); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{}
	for _, id := range []string{"000001", "000002", "000003"} {
		before[id] = rawJSON(t, b, "Sales", id)
	}

	reader := func(x *codec.Encryption) *repo.Table[SecretEmployee] {
		return table[SecretEmployee](t, b, &repo.Options{Encryption: x})
	}
	cases := []struct {
		name string
		tbl  *repo.Table[SecretEmployee]
		id   string
		want error
	}{
		{"wrong key", reader(&codec.Encryption{Key: newKEK(t, "kek-1")}), "000001", codec.ErrWrongKey},
		{"unknown key", reader(&codec.Encryption{Key: newKEK(t, "kek-2")}), "000001", codec.ErrUnknownKey},
		{"ciphertext moved between entities", emps, "000002", codec.ErrTampered},
		{"missing key id", emps, "000003", codec.ErrMissingKeyID},
	}
	for _, tc := range cases {
		_, err := tc.tbl.Get(ctx, "Sales", tc.id)
		var ee *codec.EncryptionError
		if !errors.Is(err, tc.want) || !errors.As(err, &ee) || ee.RowKey != tc.id {
			t.Errorf("%s: %v, want an *EncryptionError wrapping %v", tc.name, err, tc.want)
		}
		// A query stops at the entity it cannot decrypt, with the same error.
		_, err = tc.tbl.Collect(ctx, repo.Query{Filter: filter.Point("Sales", tc.id)})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s (query): %v", tc.name, err)
		}
	}
	for id, want := range before {
		if got := rawJSON(t, b, "Sales", id); got != want {
			t.Fatalf("a failed read changed entity %s:\n%s\n%s", id, want, got)
		}
	}
	if e, err := emps.Get(ctx, "Sales", "000001"); err != nil || e.SSN != "123-45-0001" {
		t.Fatalf("the untampered entity: %+v, %v", e, err)
	}
}

// An insert whose response is lost is retried; the retry meets the stored entity. With write
// tracking it recognises its own write id beside the ciphertext (the body is encrypted once,
// not per try); without, it says that it cannot know.
func TestEncryptedInsertSurvivesALostResponse(t *testing.T) {
	t.Parallel()
	for _, track := range []bool{true, false} {
		b := setup(t, true)
		emps := table[SecretEmployee](t, b, &repo.Options{Encryption: &codec.Encryption{Key: newKEK(t, "kek-1")}, TrackWrites: track})
		b.proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsInsertEntity, Times: 1, Action: faultproxy.DropAfterForward()})
		err := emps.Insert(b.ctx, secretEmployee("Sales", "000123"))
		if track && err != nil {
			t.Fatalf("tracked insert with a lost response: %v", err)
		}
		if !track && !errors.Is(err, repo.ErrOutcomeUnknown) {
			t.Fatalf("untracked insert with a lost response: %v, want ErrOutcomeUnknown", err)
		}
		if e, err := emps.Get(b.ctx, "Sales", "000123"); err != nil || e.SSN != "123-45-0123" {
			t.Fatalf("%+v, %v", e, err)
		}
	}
}

// Department rows share the table but carry no encrypted properties.
type Dept struct {
	Name string `table:",pk"`
	ID   string `table:",rk"`
	Head string
}

// keyIDs counts the stored entities by the key their content key is wrapped under.
func keyIDs(t *testing.T, b *bed) map[string]int {
	t.Helper()
	raw := table[codec.Entity](t, b, nil)
	all, err := raw.Collect(b.ctx, repo.Query{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range all {
		id, _ := e.EncryptionKeyID()
		out[id]++
	}
	return out
}

// readAll reads every employee with x and fails the test if any cannot be read.
func readAll(t *testing.T, b *bed, x *codec.Encryption, want int) {
	t.Helper()
	emps := table[SecretEmployee](t, b, &repo.Options{Encryption: x})
	n := 0
	for _, dept := range []string{"Finance", "Marketing", "Sales"} {
		got, err := emps.Collect(b.ctx, repo.Query{Filter: filter.RowKeyPrefix(dept, "0")}) // not the DEPARTMENT row
		if err != nil {
			t.Fatalf("read %s: %v", dept, err)
		}
		for _, e := range got {
			if w := secretEmployee(e.Department, e.EmployeeID); e.SSN != w.SSN || e.Salary != w.Salary {
				t.Fatalf("read %+v, want %+v", e, w)
			}
		}
		n += len(got)
	}
	if n != want {
		t.Fatalf("read %d employees, want %d", n, want)
	}
}

// hookKey runs hook before its first WrapKey: a way to change the table between the
// rotation's read of a page and its write.
type hookKey struct {
	codec.KeyEncryptionKey
	once atomic.Bool
	hook func()
}

func (k *hookKey) WrapKey(ctx context.Context, cek []byte) ([]byte, string, error) {
	if k.once.CompareAndSwap(false, true) {
		k.hook()
	}
	return k.KeyEncryptionKey.WrapKey(ctx, cek)
}

func TestRotateKeysStoppedMidwayAndResumed(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ctx := b.ctx
	old, next := newKEK(t, "kek-2023"), newKEK(t, "kek-2024")
	writer := table[SecretEmployee](t, b, &repo.Options{Encryption: &codec.Encryption{Key: old}})
	const perDept = 40
	var emps []*SecretEmployee
	for _, dept := range []string{"Finance", "Marketing", "Sales"} {
		for i := range perDept {
			emps = append(emps, secretEmployee(dept, fmt.Sprintf("%06d", i)))
		}
	}
	if err := writer.BulkWrite(ctx, emps, nil); err != nil {
		t.Fatal(err)
	}
	depts := table[Dept](t, b, nil)
	for _, name := range []string{"Finance", "Sales"} {
		if err := depts.Insert(ctx, &Dept{Name: name, ID: "DEPARTMENT", Head: "Jones"}); err != nil {
			t.Fatal(err)
		}
	}
	total := 3 * perDept
	both := &codec.Encryption{Key: next, Resolver: keyring(t, old, next)}
	rotator := table[SecretEmployee](t, b, &repo.Options{Encryption: both})

	// Run 1: one page of 50, then stop.
	res, err := rotator.RotateKeys(ctx, &repo.RotateOptions{PageSize: 50, Pages: 1})
	if err != nil || res.Token == "" || res.Rewrapped == 0 || res.Rewrapped+res.Unencrypted != 50 {
		t.Fatalf("run 1: %+v, %v", res, err)
	}
	ids := keyIDs(t, b)
	if ids["kek-2024"] != res.Rewrapped || ids["kek-2023"] != total-res.Rewrapped {
		t.Fatalf("after run 1: %v (rewrapped %d)", ids, res.Rewrapped)
	}
	readAll(t, b, both, total) // midway, every entity reads with the keyring

	// Run 2 fails in the middle: the transactions keep failing with 503 after one page.
	// Nothing is half-written: every entity is under one key or the other.
	var pages atomic.Int32
	b.proxy.AddRule(faultproxy.Rule{Match: func(r *http.Request) bool {
		return faultproxy.IsBatch(r) && pages.Load() >= 1
	}, Action: faultproxy.Respond(503, "ServerBusy")})
	res2, err := rotator.RotateKeys(ctx, &repo.RotateOptions{PageSize: 30, Token: res.Token,
		OnPage: func(string, repo.RotateResult) error { pages.Add(1); return nil }})
	if !errors.Is(err, repo.ErrTransient) || res2.Token == "" || res2.Token == res.Token {
		t.Fatalf("run 2 against a failing service: %+v, %v", res2, err)
	}
	b.proxy.ClearRules()
	readAll(t, b, both, total)

	// Run 3 resumes from run 2's token while a writer (still on the old key) changes the
	// Sales employees between the rotation's read of its first page and its write, and a
	// lost response makes a transaction retry: the rotation re-reads what changed and
	// still rotates everything.
	b.proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	hooked := &hookKey{KeyEncryptionKey: next, hook: func() {
		sales, err := writer.Collect(ctx, repo.Query{Filter: filter.RowKeyPrefix("Sales", "0")})
		if err != nil {
			t.Error(err)
			return
		}
		for i := range sales {
			sales[i].FirstName = "Changed"
			if err := writer.Update(ctx, &sales[i], nil); err != nil {
				t.Error(err)
			}
		}
	}}
	rotator3 := table[SecretEmployee](t, b, &repo.Options{Encryption: &codec.Encryption{Key: hooked, Resolver: keyring(t, old, next)}})
	var tokens []string
	reads := func() int {
		return b.proxy.CountMatching(func(r faultproxy.RequestInfo) bool { return r.Method == "GET" && strings.HasSuffix(r.Path, "')") })
	}
	readsBefore := reads()
	res3, err := rotator3.RotateKeys(ctx, &repo.RotateOptions{PageSize: 30, Token: res2.Token,
		OnPage: func(tok string, _ repo.RotateResult) error { tokens = append(tokens, tok); return nil }})
	if err != nil || res3.Token != "" || len(tokens) == 0 || tokens[len(tokens)-1] != "" {
		t.Fatalf("run 3: %+v, %v, tokens %q", res3, err, tokens)
	}
	if ids := keyIDs(t, b); ids["kek-2024"] != total || ids["kek-2023"] != 0 || ids[""] != 2 {
		t.Fatalf("after run 3: %v", ids)
	}
	// The lost response leaves run 3 unable to know whether its transaction committed
	// (ErrOutcomeUnknown): it re-reads those entities one by one, and one it finds already
	// under the new key counts as current, not as rewrapped by this run. No entity is
	// counted twice and none is missed.
	if n := res.Rewrapped + res2.Rewrapped + res3.Rewrapped; n > total || n+res3.Current < total {
		t.Fatalf("the runs report %d+%d+%d rewrapped entities (run 3: %d current), want %d in all", res.Rewrapped, res2.Rewrapped, res3.Rewrapped, res3.Current, total)
	}
	// The entities changed under run 3's first page went through the per-entity path: one
	// re-read each (the writer's own reads are queries). The page holds about 29 of them,
	// after the Marketing employee run 2 could not write.
	if n := reads() - readsBefore; n < perDept/2 {
		t.Fatalf("%d point reads during run 3, want at least %d (the re-reads of the changed entities)", n, perDept/2)
	}
	// The old key can go: the new one alone reads everything, the concurrent change included.
	readAll(t, b, &codec.Encryption{Key: next}, total)
	if e, err := rotator.Get(ctx, "Sales", "000039"); err != nil || e.FirstName != "Changed" {
		t.Fatalf("the entity changed during the rotation: %+v, %v", e, err)
	}

	// A rerun from the start changes nothing and says so.
	res4, err := rotator.RotateKeys(ctx, nil)
	if err != nil || res4.Rewrapped != 0 || res4.Current != total || res4.Unencrypted != 2 || res4.Token != "" {
		t.Fatalf("rerun: %+v, %v", res4, err)
	}
}

func TestRotateKeysStopsAtAnUnknownKeyAndLosesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ctx := b.ctx
	lost, old, next := newKEK(t, "kek-lost"), newKEK(t, "kek-old"), newKEK(t, "kek-new")
	w1 := table[SecretEmployee](t, b, &repo.Options{Encryption: &codec.Encryption{Key: old}})
	w0 := table[SecretEmployee](t, b, &repo.Options{Encryption: &codec.Encryption{Key: lost}})
	for _, id := range []string{"000001", "000002", "000004"} {
		if err := w1.Insert(ctx, secretEmployee("Sales", id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w0.Insert(ctx, secretEmployee("Sales", "000003")); err != nil {
		t.Fatal(err)
	}
	before := rawJSON(t, b, "Sales", "000003")
	rotator := table[SecretEmployee](t, b, &repo.Options{Encryption: &codec.Encryption{Key: next, Resolver: keyring(t, old, next)}})
	res, err := rotator.RotateKeys(ctx, nil)
	var ee *codec.EncryptionError
	if !errors.Is(err, codec.ErrUnknownKey) || !errors.As(err, &ee) || ee.RowKey != "000003" || res.Token != "" {
		t.Fatalf("rotation over an unknown key: %+v, %v", res, err)
	}
	if got := rawJSON(t, b, "Sales", "000003"); got != before {
		t.Fatal("the entity under the unknown key was changed")
	}
	ids := keyIDs(t, b)
	if ids["kek-new"] != 2 || ids["kek-old"] != 1 || ids["kek-lost"] != 1 {
		t.Fatalf("after the stopped rotation: %v (000001-2 rotated, 000003 untouched, 000004 not reached)", ids)
	}
	// With the lost key found, the same call finishes the job.
	fixed := table[SecretEmployee](t, b, &repo.Options{Encryption: &codec.Encryption{Key: next, Resolver: keyring(t, lost, old, next)}})
	res, err = fixed.RotateKeys(ctx, &repo.RotateOptions{Token: res.Token})
	if err != nil || res.Rewrapped != 2 || res.Current != 2 {
		t.Fatalf("resumed rotation: %+v, %v", res, err)
	}
	if _, err := table[codec.Entity](t, b, nil).RotateKeys(ctx, nil); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("rotation without Encryption: %v", err)
	}
}
