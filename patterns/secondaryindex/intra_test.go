package secondaryindex_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/errs"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The guide's layout: one partition, a copy per index under its RowKey prefix, the email
// copy holding only what its queries need; lookups by either key are one point query.
func TestIntraLayoutAndPointLookups(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byEmail)
	jones := emp(223, "Jun", "Jones", "jonesj@contoso.com")
	if err := x.Insert(b.Ctx, jones); err != nil {
		t.Fatal(err)
	}
	if jones.ETag == "" {
		t.Fatal("Insert did not set the ETag")
	}
	if got := b.rows(t, "Sales"); !slices.Equal(got, []string{"email_jonesj@contoso.com", "empid_000223"}) {
		t.Fatalf("rows %q", got)
	}
	full, partial := b.row(t, "Sales", "empid_000223"), b.row(t, "Sales", "email_jonesj@contoso.com")
	if full.Properties["Age"] != int32(43) || partial.Properties["Age"] != nil || partial.Properties["LastName"] != "Jones" {
		t.Fatalf("copies: %v / %v", full.Properties, partial.Properties)
	}

	mark := b.Proxies.Table.Count()
	got, err := x.Lookup(b.Ctx, "Sales", "email", "jonesj@contoso.com")
	if err != nil || got.EmployeeID != "000223" || got.RowKey != "email_jonesj@contoso.com" || got.Age != 0 {
		t.Fatalf("lookup by email: %+v, %v", got, err)
	}
	got, err = x.Get(b.Ctx, "Sales", "empid_000223")
	if err != nil || got.Email != "jonesj@contoso.com" || got.Age != 43 || got.ETag != jones.ETag {
		t.Fatalf("get by id: %+v, %v", got, err)
	}
	for _, r := range b.Proxies.Table.Requests()[mark:] {
		if r.Method != "GET" || !strings.Contains(r.Path, "PartitionKey=") {
			t.Fatalf("lookup sent %s %s %s, want point reads only", r.Method, r.Path, r.RawQuery)
		}
	}
	if n := requestsTo(b.Proxies.Table, mark); n != 2 {
		t.Fatalf("two lookups sent %d requests", n)
	}
	if _, err := x.Lookup(b.Ctx, "Sales", "email", "nobody@contoso.com"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("lookup of an absent value: %v", err)
	}
}

// A duplicate value of a unique index fails the whole write and names the index; nothing
// of the failed write is stored.
func TestIntraUniqueViolationIsAtomic(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail, byLast)
	if err := x.Insert(b.Ctx, emp(1, "Don", "Hall", "donh@contoso.com")); err != nil {
		t.Fatal(err)
	}
	before := b.rows(t, "Sales")

	err := x.Insert(b.Ctx, emp(2, "Dan", "Hall", "donh@contoso.com"))
	var uv *secondaryindex.UniqueViolationError
	if !errors.As(err, &uv) || uv.Index != "email" || uv.Value != "donh@contoso.com" || !errors.Is(err, secondaryindex.ErrUniqueViolation) || !errors.Is(err, repo.ErrAlreadyExists) {
		t.Fatalf("insert with a taken email: %v", err)
	}
	if got := b.rows(t, "Sales"); !slices.Equal(got, before) {
		t.Fatalf("a failed insert left rows: %q, before %q", got, before)
	}

	// The same through an update: the second employee exists, then takes the first's email.
	ken := emp(3, "Ken", "Kwok", "kenk@contoso.com")
	if err := x.Insert(b.Ctx, ken); err != nil {
		t.Fatal(err)
	}
	before = b.rows(t, "Sales")
	ken.Email, ken.LastName = "donh@contoso.com", "Hall"
	if err := x.Update(b.Ctx, ken); !errors.As(err, &uv) || uv.Index != "email" {
		t.Fatalf("update to a taken email: %v", err)
	}
	if got := b.rows(t, "Sales"); !slices.Equal(got, before) {
		t.Fatalf("a failed update changed rows: %q, before %q", got, before)
	}
	got, err := x.Get(b.Ctx, "Sales", "empid_000003")
	if err != nil || got.LastName != "Kwok" || got.Email != "kenk@contoso.com" {
		t.Fatalf("after the failed update: %+v %v", got, err)
	}
	// An existing primary value is ErrAlreadyExists, not a unique violation of a secondary.
	if err := x.Insert(b.Ctx, emp(3, "Ken", "Kwok", "other@contoso.com")); !errors.Is(err, repo.ErrAlreadyExists) || errors.As(err, &uv) {
		t.Fatalf("insert of an existing id: %v", err)
	}
}

// Changing an indexed value replaces the old copy by the new one in one transaction;
// copies of unchanged values are rewritten with the new properties.
func TestIntraUpdateMovesCopies(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byEmail, byLast)
	e := emp(5, "Jun", "Cao", "junc@contoso.com")
	if err := x.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	e.Email, e.Age = "jun.cao@contoso.com", 48
	mark := b.Proxies.Table.Count()
	if err := x.Update(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	// One read of the primary copy, one transaction.
	if n := requestsTo(b.Proxies.Table, mark); n != 2 {
		t.Fatalf("update sent %d requests, want 2", n)
	}
	want := []string{"email_jun.cao@contoso.com", "empid_000005", "last_" + interKey("Cao", "000005")}
	if got := b.rows(t, "Sales"); !slices.Equal(got, want) {
		t.Fatalf("rows %q, want %q", got, want)
	}
	if r := b.row(t, "Sales", want[2]); r.Properties["Age"] != int32(48) {
		t.Fatalf("the unchanged copy was not rewritten: %v", r.Properties)
	}
	// Removing a value removes the copy; giving one back adds it.
	e.Email = ""
	if err := x.Update(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	if got := b.rows(t, "Sales"); !slices.Equal(got, want[1:]) {
		t.Fatalf("rows after clearing the email: %q", got)
	}
	e.Email = "c@contoso.com"
	if err := x.Upsert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	if b.row(t, "Sales", "email_c@contoso.com") == nil {
		t.Fatal("upsert did not add the email copy")
	}
	// Delete removes every copy.
	if err := x.Delete(b.Ctx, "Sales", "empid_000005", nil); err != nil {
		t.Fatal(err)
	}
	if got := b.rows(t, "Sales"); len(got) != 0 {
		t.Fatalf("rows after delete: %q", got)
	}
	if err := x.Delete(b.Ctx, "Sales", "empid_000005", nil); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("delete of a deleted entity: %v", err)
	}
	// Upsert of a new entity inserts it.
	if err := x.Upsert(b.Ctx, emp(6, "A", "B", "ab@contoso.com")); err != nil {
		t.Fatal(err)
	}
	if len(b.rows(t, "Sales")) != 3 {
		t.Fatalf("rows after upsert: %q", b.rows(t, "Sales"))
	}
}

// Range and prefix queries return entities in the index's order, one range query each.
func TestIntraRangeAndPrefixInIndexOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail, byLast)
	people := []*Employee{
		emp(100, "Zoe", "Jones", "zoe@contoso.com"),
		emp(150, "Amy", "Smith", "amy@contoso.com"),
		emp(199, "Bob", "Jones", "bob@contoso.com"),
		emp(200, "Al", "Adams", "al@contoso.com"),
		emp(42, "Ann", "Jones_Smith", "ann@contoso.com"),
	}
	for _, p := range people {
		if err := x.Insert(b.Ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	check := func(name string, got []Employee, want string) {
		t.Helper()
		if ids(got) != want {
			t.Errorf("%s: %s, want %s", name, ids(got), want)
		}
	}
	// The guide's "employee ids 000100 to 000199".
	check("empid range", collect(t, x.Range(b.Ctx, "Sales", "empid", "000100", "000200", nil)), "000100,000150,000199")
	// The guide's "emails starting with a": in email order.
	check("email prefix a", collect(t, x.Prefix(b.Ctx, "Sales", "email", "a", nil)), "000200,000150,000042")
	check("email from b", collect(t, x.Range(b.Ctx, "Sales", "email", "b", "", nil)), "000199,000100")
	// An index with duplicates: all of one value, in id order, and "Jones_Smith" is not a Jones.
	check("find Jones", collect(t, x.Find(b.Ctx, "Sales", "last", "Jones", nil)), "000100,000199")
	check("last names in order", collect(t, x.Range(b.Ctx, "Sales", "last", "", "", nil)), "000200,000100,000199,000042,000150")
	check("last prefix Jones", collect(t, x.Prefix(b.Ctx, "Sales", "last", "Jones", nil)), "000100,000199,000042")
	check("find unique", collect(t, x.Find(b.Ctx, "Sales", "email", "bob@contoso.com", nil)), "000199")
	check("find unique absent", collect(t, x.Find(b.Ctx, "Sales", "email", "x@contoso.com", nil)), "")
}

// Delete takes the keys of any copy of an entity, as the value read through that copy
// carries them, and removes the entity and every copy; with the copy's ETag it is
// conditional on it.
func TestIntraDeleteByACopysKeyRemovesTheEntity(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"email", "last"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			b, x := intraStaff(t)
			var read Employee
			var err error
			if via == "email" {
				read, err = x.Lookup(b.Ctx, "Sales", "email", "jun@contoso.com")
			} else {
				hits := collect(t, x.Find(b.Ctx, "Sales", "last", "Jones", nil))
				if len(hits) != 1 {
					t.Fatalf("Find found %d", len(hits))
				}
				read = hits[0]
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(read.RowKey, via+"_") {
				t.Fatalf("the value read carries the RowKey %q, not its copy's", read.RowKey)
			}
			if err := x.Delete(b.Ctx, "Sales", read.RowKey, &repo.DeleteOptions{ETag: read.ETag}); err != nil {
				t.Fatal(err)
			}
			intraGone(t, b, x, "jun@contoso.com")
			if err := x.Delete(b.Ctx, "Sales", read.RowKey, nil); !errors.Is(err, repo.ErrNotFound) {
				t.Fatalf("delete through a removed copy: %v, want ErrNotFound", err)
			}
		})
	}
}

// Input that no index can hold is refused before any request.
func TestIntraInvalidInputSendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byEmail, byLast)
	mark := b.Proxies.Table.Count()
	cases := map[string]func() error{
		"slash in a unique value":     func() error { return x.Insert(b.Ctx, emp(1, "A", "B", "a/b@contoso.com")) },
		"hash in a duplicate value":   func() error { return x.Insert(b.Ctx, emp(1, "A", "B#2", "a@contoso.com")) },
		"empty primary":               func() error { return x.Insert(b.Ctx, &Employee{Department: "Sales", Email: "a@contoso.com"}) },
		"empty partition":             func() error { return x.Insert(b.Ctx, &Employee{EmployeeID: "1"}) },
		"nil":                         func() error { return x.Update(b.Ctx, nil) },
		"value too long":              func() error { return x.Upsert(b.Ctx, emp(1, "A", "B", string(make([]byte, 600))+"@x")) },
		"delete without id":           func() error { return x.Delete(b.Ctx, "Sales", "", nil) },
		"delete by a key of no index": func() error { return x.Delete(b.Ctx, "Sales", "phone_1", nil) },
		"get by the primary value, not the key": func() error {
			_, err := x.Get(b.Ctx, "Sales", "000001")
			return err
		},
		"get by a copy's key": func() error {
			_, err := x.Get(b.Ctx, "Sales", "email_a@contoso.com")
			return err
		},
		"lookup unknown index": func() error {
			_, err := x.Lookup(b.Ctx, "Sales", "phone", "1")
			return err
		},
		"lookup of an index with duplicates": func() error {
			_, err := x.Lookup(b.Ctx, "Sales", "last", "Jones")
			return err
		},
		"lookup of an impossible value": func() error {
			_, err := x.Lookup(b.Ctx, "Sales", "email", "a?b")
			return err
		},
		"find empty value": func() error {
			for _, err := range x.Find(b.Ctx, "Sales", "last", "", nil) {
				return err
			}
			return nil
		},
		"range of an unknown index": func() error {
			for _, err := range x.Range(b.Ctx, "Sales", "phone", "", "", nil) {
				return err
			}
			return nil
		},
		"backfill with a duplicate": func() error {
			return x.Backfill(b.Ctx, []*Employee{emp(1, "A", "B", "a@contoso.com"), emp(2, "C", "D", "a@contoso.com")})
		},
	}
	for name, f := range cases {
		var ie *repo.InvalidInputError
		if err := f(); !errors.As(err, &ie) {
			t.Errorf("%s: %v, want an *InvalidInputError", name, err)
		}
	}
	if n := requestsTo(b.Proxies.Table, mark); n != 0 {
		t.Fatalf("%d requests sent for refused input", n)
	}
	// The index is named in the error.
	err := x.Insert(b.Ctx, emp(1, "A", "B", "a/b@contoso.com"))
	var ie *repo.InvalidInputError
	if !errors.As(err, &ie) || ie.Field != `index "email"` {
		t.Fatalf("error does not name the index: %v", err)
	}

	// Specifications that cannot work are refused at construction.
	bad := map[string][]secondaryindex.Index[Employee]{
		"underscore in a name": {{Name: "e_mail", Value: byEmail.Value}},
		"twice the same name":  {byEmail, byEmail},
		"no value":             {{Name: "x"}},
		"unknown property":     {{Name: "x", Value: byEmail.Value, Properties: []string{"Phone"}}},
		"another table":        {{Name: "x", Value: byEmail.Value, Table: "Other"}},
		"too many":             slices.Repeat([]secondaryindex.Index[Employee]{byEmail}, 50),
	}
	for name, sec := range bad {
		if _, err := intraOn(b.Clients.Tables, b.Table, byID, sec, nil); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("NewIntra with %s: %v", name, err)
		}
	}
	if _, err := intraOn(b.Clients.Tables, b.Table, byLast, nil, nil); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("a primary with duplicates: %v", err)
	}
}

// Transient faults, including a transaction that was applied but whose response was
// lost, end with every copy written exactly once. The table tracks writes, so the retry of
// the lost transaction knows it committed (without tracking it would answer
// repo.ErrOutcomeUnknown: see TestIntraOutcomeUnknownAfterTheWriteLanded).
func TestIntraFaultsDuringWrites(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x, err := intraOn(b.Clients.Tables, b.Table, byID, []secondaryindex.Index[Employee]{byEmail, byLast},
		&repo.Options{Retry: testbed.FastRetry(), TrackWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	p := b.Proxies.Table
	p.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	p.AddRule(faultproxy.Rule{Name: "busy", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.Respond(503, "ServerBusy")})
	e := emp(11, "Don", "Hall", "donh@contoso.com")
	if err := x.Insert(b.Ctx, e); err != nil {
		t.Fatalf("insert through a lost response: %v", err)
	}
	// A write known only through its retry leaves an ETag that matches no version (its own
	// was in the lost response): re-read before the next conditional write.
	fresh, err := x.Get(b.Ctx, "Sales", "empid_000011")
	if err != nil {
		t.Fatal(err)
	}
	e = &fresh
	e.Email = "don.hall@contoso.com"
	p.AddRule(faultproxy.Rule{Name: "lost2", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	if err := x.Update(b.Ctx, e); err != nil {
		t.Fatalf("update through a lost response: %v", err)
	}
	if p.Fired("lost") != 1 || p.Fired("busy") != 1 || p.Fired("lost2") != 1 {
		t.Fatalf("faults fired: %d %d %d", p.Fired("lost"), p.Fired("busy"), p.Fired("lost2"))
	}
	want := []string{"email_don.hall@contoso.com", "empid_000011", "last_" + interKey("Hall", "000011")}
	if got := b.rows(t, "Sales"); !slices.Equal(got, want) {
		t.Fatalf("rows %q, want %q", got, want)
	}
}

// An entity type with encrypted fields is indexed through a blind index (an HMAC of the
// value, in a plain field): every copy is encoded under its own keys, so each reads back
// decrypted, and the plaintext of the encrypted field is never a key. A copy of only some
// properties of such a type is refused, before anything is written.
func TestEncryptedTypesThroughABlindIndex(t *testing.T) {
	t.Parallel()
	type Secret struct {
		Dept     string `table:",pk"`
		ID       string `table:",rk"`
		SSN      string `table:"SSN,encrypt"`
		SSNIndex string `table:"SSNIndex"`
		ETag     string `table:",etag"`
	}
	ctx := t.Context()
	svc := testenv.TableService(t)
	name := testenv.TableName(t)
	key, err := codec.NewLocalKey("k1", make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	blind, err := codec.NewBlindIndex("ssn", []byte("0123456789abcdef0123456789abcdef"), nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := &repo.Options{Encryption: &codec.Encryption{Key: key}}
	byID := secondaryindex.Index[Secret]{Name: "id", Value: func(s *Secret) string { return s.ID }}
	bySSN := secondaryindex.Index[Secret]{Name: "ssn", Value: func(s *Secret) string { return s.SSNIndex }}
	x, err := intraOn(svc, name, byID, []secondaryindex.Index[Secret]{bySSN}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = svc.DeleteTable(context.Background(), name, nil) })
	s := &Secret{Dept: "Sales", ID: "000223", SSN: "078-05-1120", SSNIndex: blind.Sum("078-05-1120")}
	if err := x.Insert(ctx, s); err != nil {
		t.Fatal(err)
	}
	// A value read through a copy carries the copy's RowKey (see Intra): check the data.
	got, err := x.Lookup(ctx, "Sales", "ssn", blind.Sum("078-05-1120"))
	if err != nil || got.SSN != "078-05-1120" || got.SSNIndex != s.SSNIndex {
		t.Fatalf("lookup through the blind index: %+v, %v", got, err)
	}
	pager := svc.NewClient(name).NewListEntitiesPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range page.Entities {
			if strings.Contains(string(raw), "078-05-1120") {
				t.Fatalf("a stored row holds the plaintext: %s", raw)
			}
		}
	}
	subset := bySSN
	subset.Properties = []string{"ID"}
	if _, err := intraOn(svc, name, byID, []secondaryindex.Index[Secret]{subset}, opts); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("a partial copy of an encrypted type: %v, want ErrInvalidInput", err)
	}
}

// Intra cannot swap the unique values of two entities in one call: each Update writes one
// entity's copies, and either order of the two updates first gives a value to a second
// entity (a *UniqueViolationError, nothing written). A swap is three writes through a
// temporary value — here no value (an entity without an email has no copy in the index);
// a placeholder value of the caller's works too. Between the writes, readers see the
// intermediate states, and a stop between them is finished by running the rest again.
func TestIntraSwapUniqueValuesTakesThreeWrites(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail)
	ann, bob := emp(831, "Ann", "Swap", "a@contoso.com"), emp(832, "Bob", "Swap", "b@contoso.com")
	for _, e := range []*Employee{ann, bob} {
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// One call cannot do it.
	direct := *ann
	direct.Email = "b@contoso.com"
	var uv *secondaryindex.UniqueViolationError
	if err := x.Update(b.Ctx, &direct); !errors.As(err, &uv) || uv.Index != "email" {
		t.Fatalf("direct swap: %v, want a *UniqueViolationError", err)
	}
	// Three writes: Ann lets go of hers, Bob takes it, Ann takes Bob's old one.
	ann.Email = ""
	if err := x.Update(b.Ctx, ann); err != nil {
		t.Fatal(err)
	}
	bob.Email = "a@contoso.com"
	if err := x.Update(b.Ctx, bob); err != nil {
		t.Fatal(err)
	}
	ann.Email = "b@contoso.com"
	if err := x.Update(b.Ctx, ann); err != nil {
		t.Fatal(err)
	}
	for email, want := range map[string]string{"a@contoso.com": "000832", "b@contoso.com": "000831"} {
		got, err := x.Lookup(b.Ctx, "Sales", "email", email)
		if err != nil || got.EmployeeID != want {
			t.Fatalf("%s: %+v %v, want employee %s", email, got, err, want)
		}
	}
}

// Intra's reads take Inter's *ReadOptions. Verify is already kept by Intra's
// transactions: it adds no request and returns what a read without it returns. On an index
// with Properties it cannot be kept and is refused before anything is sent.
func TestIntraReadOptions(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byEmail, byLast)
	if err := x.Insert(b.Ctx, emp(41, "Ada", "Lind", "ada@contoso.com")); err != nil {
		t.Fatal(err)
	}
	verify := &secondaryindex.ReadOptions{Verify: true}
	for name, read := range map[string]func(*secondaryindex.ReadOptions) iter.Seq2[Employee, error]{
		"Find": func(o *secondaryindex.ReadOptions) iter.Seq2[Employee, error] {
			return x.Find(b.Ctx, "Sales", "last", "Lind", o)
		},
		"Range": func(o *secondaryindex.ReadOptions) iter.Seq2[Employee, error] {
			return x.Range(b.Ctx, "Sales", "last", "L", "M", o)
		},
		"Prefix": func(o *secondaryindex.ReadOptions) iter.Seq2[Employee, error] {
			return x.Prefix(b.Ctx, "Sales", "last", "Li", o)
		},
	} {
		mark := b.Proxies.Table.Count()
		plain := collect(t, read(nil))
		plainRequests := requestsTo(b.Proxies.Table, mark)
		mark = b.Proxies.Table.Count()
		verified := collect(t, read(verify))
		if n := requestsTo(b.Proxies.Table, mark); n != plainRequests {
			t.Errorf("%s with Verify sent %d requests, without %d: Verify must cost nothing on Intra", name, n, plainRequests)
		}
		if len(plain) != 1 || len(verified) != 1 || plain[0] != verified[0] || verified[0].Email != "ada@contoso.com" || verified[0].Age == 0 {
			t.Errorf("%s: without Verify %+v, with %+v; want the same full entity", name, plain, verified)
		}
	}
	for name, read := range map[string]iter.Seq2[Employee, error]{
		"Find":   x.Find(b.Ctx, "Sales", "email", "ada@contoso.com", verify),
		"Range":  x.Range(b.Ctx, "Sales", "email", "a", "b", verify),
		"Prefix": x.Prefix(b.Ctx, "Sales", "email", "a", verify),
	} {
		mark := b.Proxies.Table.Count()
		var got error
		for _, err := range read {
			got = err
			break
		}
		if !errors.Is(got, errs.ErrInvalidInput) || !strings.Contains(got.Error(), "Verify") {
			t.Errorf("%s with Verify on an index with Properties: %v, want ErrInvalidInput naming Verify", name, got)
		}
		if n := requestsTo(b.Proxies.Table, mark); n != 0 {
			t.Errorf("%s: %d requests sent before the refusal", name, n)
		}
	}
	// Without Verify the partial index still reads.
	if got := collect(t, x.Find(b.Ctx, "Sales", "email", "ada@contoso.com", nil)); len(got) != 1 {
		t.Fatalf("Find without Verify found %d", len(got))
	}
}
