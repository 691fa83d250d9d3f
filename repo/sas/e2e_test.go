package sas_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/repo/sas"
	"github.com/tablepatterns/tablepatterns/retry"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Employee is the guide's employee entity.
type Employee struct {
	Department string `table:",pk"`
	EmployeeID string `table:",rk"`
	FirstName  string
	LastName   string
	ETag       string `table:",etag"`
}

// bed is a table holding the guide's employees, the account key that signs tokens, and
// the table endpoint.
type bed struct {
	ctx      context.Context
	name     string
	key      *sas.SharedKey
	endpoint string
}

func setup(t *testing.T) *bed {
	t.Helper()
	b := &bed{ctx: t.Context(), name: testenv.TableName(t)}
	var err error
	b.key, b.endpoint, err = sas.SharedKeyFromConnectionString(testenv.ConnectionString(t))
	if err != nil {
		t.Fatal(err)
	}
	testenv.Table(t, b.name)
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	owner, err := repo.New[Employee](clients.Tables, b.name, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []*Employee{
		{Department: "Sales", EmployeeID: "000123", FirstName: "Don", LastName: "Hall"},
		{Department: "Sales", EmployeeID: "000152", FirstName: "Jun", LastName: "Cao"},
		{Department: "Marketing", EmployeeID: "000223", FirstName: "Sara", LastName: "Davis"},
	} {
		if err := owner.Insert(b.ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// table returns the employees table reached with token only (no account key).
func (b *bed) table(t *testing.T, endpoint, token string) *repo.Table[Employee] {
	t.Helper()
	svc, err := repo.NewTablesWithSAS(endpoint, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := repo.New[Employee](svc, b.name, &repo.Options{Retry: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// sign signs v for the test's table. Azurite speaks plain HTTP: a token without an
// explicit protocol is made for HTTPS and HTTP here (the default, HTTPS only, is tested
// by TestExpiredNotYetValidAndWrongTableTokensAreRefused).
func (b *bed) sign(t *testing.T, v sas.Values) string {
	t.Helper()
	v.Table = b.name
	if v.Protocol == "" {
		v.Protocol = sas.HTTPSAndHTTP
	}
	token, err := v.Sign(b.key)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// refused asserts a 403 with one of the given error codes (any code if none).
func refused(t *testing.T, what string, err error, codes ...string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != 403 {
		t.Fatalf("%s: %v, want 403 %v", what, err, codes)
	}
	for _, c := range codes {
		if re.ErrorCode == c {
			return
		}
	}
	if len(codes) > 0 {
		t.Fatalf("%s: 403 %s, want one of %v", what, re.ErrorCode, codes)
	}
}

func TestQueryOnlyTokenReadsButCannotWrite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.sign(t, sas.Values{Permissions: sas.Permissions{Query: true}, Expiry: time.Now().Add(time.Hour)})
	emps := b.table(t, b.endpoint, token)

	e, err := emps.Get(b.ctx, "Sales", "000123")
	if err != nil || e.FirstName != "Don" {
		t.Fatalf("get with a query token: %+v, %v", e, err)
	}
	all, err := emps.Collect(b.ctx, repo.Query{})
	if err != nil || len(all) != 3 {
		t.Fatalf("query with a query token: %d entities, %v", len(all), err)
	}
	refused(t, "insert", emps.Insert(b.ctx, &Employee{Department: "Sales", EmployeeID: "000999"}), "AuthorizationPermissionMismatch")
	refused(t, "delete", emps.Delete(b.ctx, "Sales", "000123", nil), "AuthorizationPermissionMismatch")
	if _, err := emps.Get(b.ctx, "Sales", "000123"); err != nil {
		t.Fatalf("the refused delete deleted: %v", err)
	}
}

// A key-range token works end to end, which proves its range fields are both signed and
// in the URL: Azurite recomputes the signature from the URL's spk/epk (it does not
// enforce the range itself). aztables' own token for the same range is refused.
func TestKeyRangeTokenIsAcceptedWhereAztablesTokenIsNot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	v := sas.Values{
		Permissions: sas.Permissions{Query: true, Add: true, Update: true, Delete: true},
		Expiry:      time.Now().Add(time.Hour), Range: sas.RowRange("Sales", "000100", "000199"),
	}
	emps := b.table(t, b.endpoint, b.sign(t, v))
	sales, err := emps.Collect(b.ctx, repo.Query{Filter: filter.PartitionKey("Sales")})
	if err != nil || len(sales) != 2 {
		t.Fatalf("query in range: %d, %v", len(sales), err)
	}
	if err := emps.Insert(b.ctx, &Employee{Department: "Sales", EmployeeID: "000160", FirstName: "Ken"}); err != nil {
		t.Fatalf("insert in range: %v", err)
	}
	if err := emps.Upsert(b.ctx, &Employee{Department: "Sales", EmployeeID: "000160", FirstName: "Ken", LastName: "Kwok"}, nil); err != nil {
		t.Fatalf("upsert in range (a+u): %v", err)
	}
	if err := emps.Delete(b.ctx, "Sales", "000160", nil); err != nil {
		t.Fatalf("delete in range: %v", err)
	}
	// (Entity group transactions are not tried: Azurite checks a service SAS on $batch
	// against the canonical resource /table/<account>/$batch, so it refuses every
	// transaction made with one; the service accepts them.)
	if !v.Range.Contains("Sales", "000170") || v.Range.Contains("Marketing", "000223") {
		t.Fatal("Range.Contains disagrees with the token's range")
	}

	// The same range signed by aztables: the signature covers spk/srk/epk/erk, the URL
	// does not carry them, so the service computes another signature.
	cred, err := aztables.NewSharedKeyCredential(b.key.AccountName(), accountKey(t))
	if err != nil {
		t.Fatal(err)
	}
	azToken, err := aztables.SASSignatureValues{
		TableName: b.name, Permissions: "r", ExpiryTime: time.Now().Add(time.Hour),
		StartPartitionKey: "Sales", StartRowKey: "000100", EndPartitionKey: "Sales", EndRowKey: "000199",
	}.Sign(cred)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.table(t, b.endpoint, azToken).Get(b.ctx, "Sales", "000123")
	refused(t, "aztables key-range token", err, "AuthorizationFailure")

	// And ours with the range cut out of the URL fails the same way.
	q, _ := url.ParseQuery(b.sign(t, v))
	for _, k := range []string{"spk", "srk", "epk", "erk"} {
		q.Del(k)
	}
	_, err = b.table(t, b.endpoint, q.Encode()).Get(b.ctx, "Sales", "000123")
	refused(t, "token without its range", err, "AuthorizationFailure")
}

func accountKey(t *testing.T) string {
	t.Helper()
	return testenv.Server(t).AccountKey
}

func TestExpiredNotYetValidAndWrongTableTokensAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := sas.Permissions{Query: true}
	now := time.Now()
	// The service answers an out-of-time token with AuthenticationFailed; Azurite with
	// AuthorizationFailure.
	cases := map[string]struct {
		v    sas.Values
		code string
	}{
		"expired":        {sas.Values{Permissions: r, Start: now.Add(-2 * time.Hour), Expiry: now.Add(-time.Hour)}, "AuthenticationFailed|AuthorizationFailure"},
		"not yet valid":  {sas.Values{Permissions: r, Start: now.Add(time.Hour), Expiry: now.Add(2 * time.Hour)}, "AuthenticationFailed|AuthorizationFailure"},
		"https only":     {sas.Values{Permissions: r, Expiry: now.Add(time.Hour), Protocol: sas.HTTPSOnly}, "AuthorizationProtocolMismatch"},
		"https and http": {sas.Values{Permissions: r, Expiry: now.Add(time.Hour), Protocol: sas.HTTPSAndHTTP}, ""},
	}
	// The default protocol is HTTPS only: over Azurite's plain HTTP the token is refused.
	def := sas.Values{Table: b.name, Permissions: r, Expiry: now.Add(time.Hour)}
	defToken, err := def.Sign(b.key)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.table(t, b.endpoint, defToken).Get(b.ctx, "Sales", "000123")
	refused(t, "default protocol over http", err, "AuthorizationProtocolMismatch")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := b.table(t, b.endpoint, b.sign(t, tc.v)).Get(b.ctx, "Sales", "000123")
			if tc.code == "" {
				if err != nil {
					t.Fatalf("valid token refused: %v", err)
				}
				return
			}
			refused(t, name, err, strings.Split(tc.code, "|")...)
		})
	}
	// A token for another table does not open this one.
	other := sas.Values{Table: "Other" + b.name[:10], Permissions: r, Expiry: now.Add(time.Hour)}
	token, err := other.Sign(b.key)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.table(t, b.endpoint, token).Get(b.ctx, "Sales", "000123")
	refused(t, "token of another table", err)
}

var fastRetry = retryPolicy()

func TestNewTablesWithSASRefusesBadInputAndRedactsTheToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ endpoint, token string }{
		{"", "sv=1&sig=x"}, {"ftp://host/acct", "sv=1&sig=x"}, {"http://127.0.0.1:10002/acct?x=1", "sig=x"},
		{"http://127.0.0.1:10002/acct", ""}, {"http://127.0.0.1:10002/acct", "sv=2019-02-02"},
		{"http://127.0.0.1:10002/acct", "%zz"},
	} {
		if _, err := repo.NewTablesWithSAS(tc.endpoint, tc.token, nil); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("NewTablesWithSAS(%q, %q) = %v", tc.endpoint, tc.token, err)
		}
	}
	// Plain HTTP only to loopback, unless asked for: a token sent in clear text is a bearer credential anyone on the path can replay.
	for _, tc := range []struct {
		endpoint  string
		allowHTTP bool
		ok        bool
	}{
		{"http://myaccount.table.core.windows.net", false, false},
		{"http://10.0.0.5:10002/devstoreaccount1", false, false},
		{"http://127.0.0.1.example.com/acct", false, false},
		{"http://localhost.example.com/acct", false, false},
		{"http://user@127.0.0.1:10002/acct", false, false},
		{"http://myaccount.table.core.windows.net", true, true},
		{"https://myaccount.table.core.windows.net", false, true},
		{"http://127.0.0.1:10002/devstoreaccount1", false, true},
		{"http://127.8.9.10:10002/devstoreaccount1", false, true},
		{"http://localhost:10002/devstoreaccount1", false, true},
		{"http://[::1]:10002/devstoreaccount1", false, true},
	} {
		_, err := repo.NewTablesWithSAS(tc.endpoint, "sv=2019-02-02&sig=x", &repo.ClientOptions{AllowHTTP: tc.allowHTTP})
		if tc.ok && err != nil || !tc.ok && !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("NewTablesWithSAS(%q, AllowHTTP %v) = %v, want ok %v", tc.endpoint, tc.allowHTTP, err, tc.ok)
		}
	}

	// A transport failure does not put the token in the error text.
	b := setup(t)
	ps := testenv.Proxies(t)
	u, _ := url.Parse(b.endpoint)
	ps.Table.AddRule(faultproxy.Rule{Match: faultproxy.IsInsertEntity, Action: faultproxy.DropBeforeForward()})
	token := b.sign(t, sas.Values{Permissions: sas.Permissions{Query: true, Add: true}, Expiry: time.Now().Add(time.Hour)})
	emps := b.table(t, ps.Table.URL()+u.Path, token)
	err := emps.Insert(b.ctx, &Employee{Department: "Sales", EmployeeID: "000777"})
	// Every attempt was cut after it was written: the insert may have landed, so the
	// exhausted retries say ErrOutcomeUnknown, not a plain transient failure.
	if err == nil || !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("insert through a dropping proxy: %v", err)
	}
	q, _ := url.ParseQuery(token)
	if msg := err.Error(); strings.Contains(msg, "sig=") || strings.Contains(msg, url.QueryEscape(q.Get("sig"))) || strings.Contains(msg, q.Get("sig")) {
		t.Fatalf("error text carries the token: %s", msg)
	}
	if n := ps.Table.CountMatching(func(r faultproxy.RequestInfo) bool { return r.Method == "POST" }); n < 2 {
		t.Fatalf("the insert was sent %d times, want retries", n)
	}
}

func retryPolicy() retry.Policy {
	return retry.Policy{Delay: 5 * time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxRetries: 2}
}

// Service URLs that look loopback to one reader and are not, or that smuggle a
// host: NewTablesWithSAS refuses plain http to each unless AllowHTTP.
func TestNewTablesWithSASRefusesPlainHTTPToHostsThatOnlyLookLoopback(t *testing.T) {
	t.Parallel()
	tok := "sv=2019-02-02&tn=docs&sp=r&se=2030-01-01T00%3A00%3A00Z&spr=https&sig=abc"
	for _, u := range []string{
		"http://localhost.evil.example:10002/acct",
		"http://localhost./acct",
		"http://127.0.0.1.nip.io/acct",
		"http://127.1/acct",
		"http://2130706433/acct",
		"http://0x7f000001/acct",
		"http://0.0.0.0/acct",
		"HTTP://evil.example/acct",
		"http://evil.example#@127.0.0.1/acct",
		"http://127.0.0.1@evil.example/acct",
		"http://evil.example\\@127.0.0.1/acct",
		"http://evil.example/acct?x=1",
		" http://evil.example/acct",
		"http:\\\\evil.example/acct",
	} {
		svc, err := repo.NewTablesWithSAS(u, tok, nil)
		if err == nil {
			_ = svc
			t.Errorf("%q: accepted", u)
			continue
		}
		if strings.Contains(err.Error(), "sig=abc") {
			t.Errorf("%q: the error carries the token: %v", u, err)
		}
	}
	for _, u := range []string{"http://127.0.0.1:10002/acct", "http://localhost:10002/acct", "http://[::1]:10002/acct", "http://127.9.9.9/acct", "https://evil.example/acct"} {
		if _, err := repo.NewTablesWithSAS(u, tok, nil); err != nil {
			t.Errorf("%q: %v", u, err)
		}
	}
}
