package secondaryindex_test

// Fixtures shared by the tests of this package: index definitions, beds of employees,
// and the helpers that read an index partition back.

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// Both index variants are companions of the archive.
var (
	_ consistency.Companion = (*secondaryindex.Intra[Employee])(nil)
	_ consistency.Companion = (*secondaryindex.Inter[Employee])(nil)
)

// intraStaff returns a proxied bed with an Intra (email and last name copies) holding
// Jun Jones (1) and Amy Smith (2).
func intraStaff(t *testing.T) (*bed, *secondaryindex.Intra[Employee]) {
	t.Helper()
	b := setup(t, true)
	x := b.intra(t, byEmail, byLast)
	for _, e := range []*Employee{emp(1, "Jun", "Jones", "jun@contoso.com"), emp(2, "Amy", "Smith", "amy@contoso.com")} {
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	return b, x
}

// intraGone checks that no read of x finds employee 1 (jun@contoso.com, Jones), that
// employee 2 is untouched, and that Verify finds no drift.
func intraGone(t *testing.T, b *bed, x *secondaryindex.Intra[Employee], email string) {
	t.Helper()
	if _, err := x.Lookup(b.Ctx, "Sales", "email", email); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("lookup of the archived employee's email: %v", err)
	}
	if _, err := x.Get(b.Ctx, "Sales", "empid_000001"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("get of the archived employee: %v", err)
	}
	if got := ids(collect(t, x.Find(b.Ctx, "Sales", "last", "Jones", nil))); got != "" {
		t.Fatalf("find Jones after the archive: %q", got)
	}
	if got := ids(collect(t, x.Range(b.Ctx, "Sales", "email", "", "", nil))); got != "000002" {
		t.Fatalf("every email after the archive: %q", got)
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "email", "amy@contoso.com"); err != nil || got.EmployeeID != "000002" {
		t.Fatalf("the other employee: %+v %v", got, err)
	}
	mustClean(t, b.Ctx, x, 1, "Sales")
}

// interStaff returns a bed with an Inter (email and last name copies) and its worker,
// after inserting employees 1 and 2 and letting the worker write their copies.
func interStaff(t *testing.T, proxied bool) (*bed, *secondaryindex.Inter[Employee], *queueworker.Worker) {
	t.Helper()
	b := setup(t, proxied)
	q, name := b.safetyQueue(t)
	x := b.inter(t, q, safety, byEmail, byLast)
	w := b.worker(t, name, x)
	for _, e := range []*Employee{iemp(1, "Jun", "Jones", "jun@contoso.com"), iemp(2, "Amy", "Smith", "amy@contoso.com")} {
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	b.drainAfterSafety(t, w)
	if _, err := x.Lookup(b.Ctx, "Sales", "email", "jun@contoso.com"); err != nil {
		t.Fatalf("before the archive: %v", err)
	}
	return b, x, w
}

// interGone checks that no read of x finds employee 1 once the worker settled, and that
// Verify finds no drift.
func interGone(t *testing.T, b *bed, x *secondaryindex.Inter[Employee]) {
	t.Helper()
	if _, err := x.Lookup(b.Ctx, "Sales", "email", "jun@contoso.com"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("lookup of the archived employee's email: %v", err)
	}
	if got := ids(collect(t, x.Find(b.Ctx, "Sales", "last", "Jones", nil))); got != "" {
		t.Fatalf("find Jones after the archive: %q", got)
	}
	if got := ids(collect(t, x.Range(b.Ctx, "Sales", "email", "", "", nil))); got != "000002" {
		t.Fatalf("every email after the archive: %q", got)
	}
	if b.row(t, "email_Sales", interKey("jun@contoso.com", "000001")) != nil {
		t.Fatal("the archived employee's email copy is still stored")
	}
	mustClean(t, b.Ctx, x, 1, "Sales")
}

// byMailPartial is a unique email index whose copies carry only what a mailing query
// needs: not the primary value (the employee id).
var byMailPartial = secondaryindex.Index[Employee]{Name: "mail", Value: func(e *Employee) string { return e.Email },
	Properties: []string{"FirstName", "Email"}}

// byLastLower is a last-name index with duplicates that lower-cases its values.
var byLastLower = secondaryindex.Index[Employee]{Name: "last", Value: func(e *Employee) string { return e.LastName },
	AllowDuplicates: true, Normalize: strings.ToLower}

func toString(v any) string { return fmt.Sprint(v) }

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

// forgeRef rewrites the email ref of employee id (stored data) to name key, and marks it
// as recording no version of the employee, so that the next reconciliation acts on it.
func (b *bed) forgeRef(t *testing.T, id, key string) {
	t.Helper()
	ref := b.row(t, "email_Sales", "!"+keys.Join(id))
	if ref == nil {
		t.Fatalf("no ref row for employee %s", id)
	}
	ref.Properties["Key"] = key
	ref.Properties["SourceETag"] = "forged"
	if err := b.Raw.Update(b.Ctx, ref, nil); err != nil {
		t.Fatal(err)
	}
}

// iemp is an employee of the primary table of an Inter: the RowKey is the employee id.
func iemp(id int, first, last, email string) *Employee {
	e := emp(id, first, last, email)
	e.RowKey = e.EmployeeID
	return e
}

var errCrash = errors.New("test: the process stops here")

// safety is the SafetyDelay of the Inter tests. A write must land within half of it (the
// SafetyDelay/2 window): under -race on a 2-core machine running two test suites at once a
// proxied insert plus its enqueue has taken more than 2 s, so the window is 5 s. Tests wait
// for it only where a message is held back that long.
const safety = 10 * time.Second

// state returns the copies and the live refs (those that name a copy) of an index
// partition, RowKeys in order. Tombstones (refs of entities without a copy, which are
// never deleted) are left out.
func (b *bed) state(t *testing.T, part string) (copies, refs []string) {
	t.Helper()
	all, err := b.Raw.Collect(b.Ctx, repo.Query{Filter: filter.PartitionKey(part)})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		switch {
		case !strings.HasPrefix(e.RowKey, "!"):
			copies = append(copies, e.RowKey)
		case e.Properties["Key"] != "" && e.Properties["Key"] != nil:
			refs = append(refs, e.RowKey)
		}
	}
	return copies, refs
}

// expect checks that the index partition holds exactly the copies of the given
// (value, id) pairs and one ref per id.
func (b *bed) expect(t *testing.T, part string, pairs ...[2]string) {
	t.Helper()
	var wantCopies, wantRefs []string
	for _, p := range pairs {
		wantCopies = append(wantCopies, interKey(p[0], p[1]))
		wantRefs = append(wantRefs, "!"+p[1])
	}
	slices.Sort(wantCopies)
	slices.Sort(wantRefs)
	copies, refs := b.state(t, part)
	if !slices.Equal(copies, wantCopies) || !slices.Equal(refs, wantRefs) {
		t.Fatalf("%s holds copies %q refs %q, want %q %q", part, copies, refs, wantCopies, wantRefs)
	}
}

// jobber is the job method set Intra and Inter share (checked at compile time).
type jobber interface {
	BackfillKind() string
	VerifyKind() string
	RepairKind() string
	StartBackfill(context.Context, ...string) error
	StartVerify(context.Context, ...string) error
	StartRepair(context.Context, ...string) error
	Register(*queueworker.Registry) error
}

var (
	_ jobber = (*secondaryindex.Intra[Employee])(nil)
	_ jobber = (*secondaryindex.Inter[Employee])(nil)
)

// driftInter stores five employees with their email copies through an Inter on the
// direct clients (returned, for the test's checks), gives the index each kind of drift
// (employee 1's copy deleted, employee 2's copy edited, an orphan copy of an employee
// that never was), and takes the inserts' messages off q.
func driftInter(t *testing.T, b *bed, q *queueworker.Client) *secondaryindex.Inter[Employee] {
	t.Helper()
	x, err := secondaryindex.NewInter(b.Direct.Tables, b.Table, q, []secondaryindex.Index[Employee]{byEmail},
		&secondaryindex.InterOptions{SafetyDelay: -1, Conflict: testbed.FastRetry(), Table: repo.Options{Retry: testbed.FastRetry()}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if err := x.Insert(b.Ctx, iemp(i, "F", "L", fmt.Sprintf("e%d@contoso.com", i))); err != nil {
			t.Fatal(err)
		}
		if err := x.Reconcile(b.Ctx, "Sales", fmt.Sprintf("%06d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Raw.Delete(b.Ctx, "email_Sales", interKey("e1@contoso.com", "000001"), nil); err != nil {
		t.Fatal(err)
	}
	c := b.row(t, "email_Sales", interKey("e2@contoso.com", "000002"))
	c.Properties["FirstName"] = "Tampered"
	if err := b.Raw.Upsert(b.Ctx, c, nil); err != nil {
		t.Fatal(err)
	}
	o := &codec.Entity{PartitionKey: "email_Sales", RowKey: interKey("ghost@contoso.com", "000099"), Properties: map[string]any{"FirstName": "Ghost"}}
	if err := b.Raw.Insert(b.Ctx, o); err != nil {
		t.Fatal(err)
	}
	b.TakeMessages(q) // the inserts' reconciliations: already run above
	return x
}

// seedEmployees writes n employees over the given departments straight into the table,
// as a table looks before an index is added to it (no copies, no refs).
func (b *bed) seedEmployees(t *testing.T, n int, depts ...string) []*Employee {
	t.Helper()
	return b.seedEmployeesIn(t, n, func(i int) string { return depts[i%len(depts)] })
}

// seedEmployeesIn is seedEmployees with employee i in department dept(i).
func (b *bed) seedEmployeesIn(t *testing.T, n int, dept func(i int) string) []*Employee {
	t.Helper()
	raw, err := repo.New[Employee](b.Direct.Tables, b.Table, b.RepoOptions())
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*Employee, n)
	for i := range n {
		e := iemp(i, "First", fmt.Sprintf("Last%d", i%97), fmt.Sprintf("employee%06d@contoso.com", i))
		e.Department = dept(i)
		out[i] = e
	}
	if err := raw.BulkWrite(b.Ctx, out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

// mustClean verifies every partition and fails the test on any drift.
func mustClean[X interface {
	Verify(context.Context, string, *secondaryindex.VerifyOptions) (*secondaryindex.Report, error)
}](t *testing.T, ctx context.Context, x X, wantEntities int, depts ...string) {
	t.Helper()
	total := 0
	for _, pk := range depts {
		r, err := x.Verify(ctx, pk, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Drift() != 0 {
			t.Fatalf("partition %s: %d missing, %d stale, %d orphan; samples %+v", pk, r.Missing, r.Stale, r.Orphan, r.Samples)
		}
		total += r.Entities
	}
	if wantEntities >= 0 && total != wantEntities {
		t.Fatalf("verify read %d entities, want %d", total, wantEntities)
	}
}

// maintainer is the maintenance method set that Intra and Inter share (checked at compile
// time, like the rest of their shape).
type maintainer interface {
	BackfillPartition(context.Context, string, *secondaryindex.BackfillOptions) (secondaryindex.Checkpoint, error)
	Verify(context.Context, string, *secondaryindex.VerifyOptions) (*secondaryindex.Report, error)
	Repair(context.Context, string, *secondaryindex.VerifyOptions) (*secondaryindex.Report, error)
	Partitions(context.Context) iter.Seq2[string, error]
	StartBackfill(context.Context, ...string) error
	BackfillKind() string
	Register(*queueworker.Registry) error
}

var (
	_ maintainer = (*secondaryindex.Intra[Employee])(nil)
	_ maintainer = (*secondaryindex.Inter[Employee])(nil)
)

// boundSecret is secret with the primary value's property encrypted too: what the
// package documentation advises for an index on an encrypted type, so that a copy's
// owner is bound to the copy by the encryption.
type boundSecret struct {
	Dept     string `table:",pk"`
	RK       string `table:",rk"`
	ID       string `table:"EmployeeId,encrypt"`
	SSN      string `table:"SSN,encrypt"`
	SSNIndex string `table:"SSNIndex"`
	ETag     string `table:",etag"`
}

// busyIntra is an Intra of employees with the email index whose requests are retried
// once: enough to exhaust against a proxy rule that answers 503 every time.
func (b *bed) busyIntra(t *testing.T) *secondaryindex.Intra[Employee] {
	t.Helper()
	once := testbed.FastRetry()
	once.MaxRetries = 1
	x, err := intraOn(b.Clients.Tables, b.Table, byID, []secondaryindex.Index[Employee]{byEmail}, &repo.Options{Retry: once})
	if err != nil {
		t.Fatal(err)
	}
	return x
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

// byEmailLower is an email index that lower-cases on write and on lookup.
var byEmailLower = secondaryindex.Index[Employee]{Name: "email", Value: func(e *Employee) string { return e.Email },
	Normalize: strings.ToLower}

// index is the method set Intra and Inter share, with the same signatures: the package
// documentation promises it, and this fails to compile when either variant drifts.
type index[T any] interface {
	Get(ctx context.Context, pk, rk string) (T, error)
	Lookup(ctx context.Context, pk, index, value string) (T, error)
	Find(ctx context.Context, pk, index, value string, opts *secondaryindex.ReadOptions) iter.Seq2[T, error]
	Range(ctx context.Context, pk, index, from, to string, opts *secondaryindex.ReadOptions) iter.Seq2[T, error]
	Prefix(ctx context.Context, pk, index, prefix string, opts *secondaryindex.ReadOptions) iter.Seq2[T, error]
	Insert(ctx context.Context, v *T) error
	Update(ctx context.Context, v *T) error
	Upsert(ctx context.Context, v *T) error
	Delete(ctx context.Context, pk, rk string, opts *repo.DeleteOptions) error
	CreateIfNotExists(ctx context.Context) error
	DeleteTable(ctx context.Context) error
	Table() *repo.Table[T]
	Name() string
}

var (
	_ index[Employee] = (*secondaryindex.Intra[Employee])(nil)
	_ index[Employee] = (*secondaryindex.Inter[Employee])(nil)
)

// directInter is an Inter on clients that bypass the proxies: the competing operation of
// a window test, never held by a pause. A window test (TestInterWindow..., TestIntraWindow...)
// holds one request at the proxy (faultproxy.Pause) at the narrowest window of a promise
// of the package documentation, runs the competing operation to completion inside it, and
// releases the request: the interleaving is exact.
func (b *bed) directInter(t *testing.T, indexes ...secondaryindex.Index[Employee]) *secondaryindex.Inter[Employee] {
	t.Helper()
	q, _ := b.Queue()
	x, err := secondaryindex.NewInter(b.Direct.Tables, b.Table, q, indexes, &secondaryindex.InterOptions{
		SafetyDelay: -1, Table: repo.Options{Retry: testbed.FastRetry()},
	})
	if err != nil {
		t.Fatal(err)
	}
	return x
}
