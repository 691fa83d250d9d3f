package sas_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/sas"
)

// testKey is an arbitrary account key for offline fixtures.
const testKey = "dGFibGVwYXR0ZXJucyB0ZXN0IGtleSwgbm90IGEgcmVhbCBhY2NvdW50IGtleSEhIQ=="

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The fixtures are written from "Create a service SAS" (Storage REST reference): the table
// string-to-sign of version 2015-04-05 and later, its field values taken from the
// reference's own examples (the Coho Winery range, the 168.1.5.60-168.1.5.70 IP range, the
// 2019-02-02 example times). They are not the output of this package.
func TestStringToSignFromTheSpecification(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		account string
		v       sas.Values
		want    string
	}{
		{
			// The reference example, with the protocol line of this package's default
			// (HTTPSOnly) where the reference leaves it empty.
			name:    "key range with a stored access policy (reference table example)",
			account: "myaccount",
			v: sas.Values{
				Table: "MyTable", Permissions: sas.Permissions{Query: true},
				Start: mustTime(t, "2015-07-01T08:49:00Z"), Expiry: mustTime(t, "2015-07-02T08:49:00Z"),
				Identifier: "YWJjZGVmZw==", Version: "2015-04-05",
				Range: sas.RowRange("Coho Winery", "Auburn", "Seattle"),
			},
			want: "r\n" + "2015-07-01T08:49:00Z\n" + "2015-07-02T08:49:00Z\n" + "/table/myaccount/mytable\n" +
				"YWJjZGVmZw==\n" + "\n" + "https\n" + "2015-04-05\n" +
				"Coho Winery\n" + "Auburn\n" + "Coho Winery\n" + "Seattle",
		},
		{
			name:    "every field, permissions in the service's order",
			account: "myaccount",
			v: sas.Values{
				Table: "Employees", Permissions: sas.Permissions{Delete: true, Update: true, Add: true, Query: true},
				Start: mustTime(t, "2019-04-29T22:18:26Z"), Expiry: mustTime(t, "2019-04-30T02:23:26Z"),
				IP:       sas.IPRange{Start: netip.MustParseAddr("168.1.5.60"), End: netip.MustParseAddr("168.1.5.70")},
				Protocol: sas.HTTPSOnly,
				Range:    sas.Partition("Sales"),
			},
			want: "raud\n" + "2019-04-29T22:18:26Z\n" + "2019-04-30T02:23:26Z\n" + "/table/myaccount/employees\n" +
				"\n" + "168.1.5.60-168.1.5.70\n" + "https\n" + "2019-02-02\n" +
				"Sales\n" + "\n" + "Sales\n" + "",
		},
		{
			name:    "minimal: the range lines are present even when empty, the protocol is https",
			account: "devstoreaccount1",
			v: sas.Values{Table: "t123", Permissions: sas.Permissions{Add: true},
				Expiry: time.Date(2030, 1, 1, 0, 0, 0, 0, time.FixedZone("CET", 3600))},
			want: "a\n" + "\n" + "2029-12-31T23:00:00Z\n" + "/table/devstoreaccount1/t123\n" +
				"\n" + "\n" + "https\n" + "2019-02-02\n" + "\n" + "\n" + "\n" + "",
		},
	}
	key, err := sas.NewSharedKey("myaccount", testKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.v.StringToSign(tc.account)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("string-to-sign\n got %q\nwant %q", got, tc.want)
			}
			if tc.account != "myaccount" {
				return
			}
			// The signature: base64 HMAC-SHA256 of the UTF-8 string-to-sign under the
			// base64-decoded account key, computed here from the specification.
			raw, _ := base64.StdEncoding.DecodeString(testKey)
			mac := hmac.New(sha256.New, raw)
			mac.Write([]byte(tc.want))
			wantSig := base64.StdEncoding.EncodeToString(mac.Sum(nil))
			token, err := tc.v.Sign(key)
			if err != nil {
				t.Fatal(err)
			}
			q, err := url.ParseQuery(token)
			if err != nil {
				t.Fatal(err)
			}
			if q.Get("sig") != wantSig {
				t.Fatalf("sig = %q, want %q", q.Get("sig"), wantSig)
			}
		})
	}
}

func TestTokenCarriesEverySignedField(t *testing.T) {
	t.Parallel()
	key, _ := sas.NewSharedKey("myaccount", testKey)
	v := sas.Values{
		Table: "Employees", Permissions: sas.Permissions{Query: true, Add: true, Update: true, Delete: true},
		Start: mustTime(t, "2019-04-29T22:18:26Z"), Expiry: mustTime(t, "2019-04-30T02:23:26Z"),
		Identifier: "policy1",
		IP:         sas.IPRange{Start: netip.MustParseAddr("168.1.5.60"), End: netip.MustParseAddr("168.1.5.70")},
		Protocol:   sas.HTTPSAndHTTP,
		Range:      sas.Range{StartPartitionKey: "Coho Winery", StartRowKey: "Auburn", EndPartitionKey: "Coho Winery", EndRowKey: "Seattle+1&x=y"},
	}
	token, err := v.Sign(key)
	if err != nil {
		t.Fatal(err)
	}
	q, err := url.ParseQuery(token)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"sv": "2019-02-02", "tn": "Employees", "sp": "raud", "st": "2019-04-29T22:18:26Z", "se": "2019-04-30T02:23:26Z",
		"sip": "168.1.5.60-168.1.5.70", "spr": "https,http", "si": "policy1",
		"spk": "Coho Winery", "srk": "Auburn", "epk": "Coho Winery", "erk": "Seattle+1&x=y",
	}
	for k, v := range want {
		if got := q[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if len(q) != len(want)+1 || q.Get("sig") == "" {
		t.Errorf("token has %d parameters (%v), want the %d signed fields and sig", len(q), q, len(want))
	}
	// Spaces are %20, never '+', which some decoders read as a plus.
	if !strings.Contains(token, "spk=Coho%20Winery") || strings.Contains(token, "Coho+Winery") {
		t.Errorf("space encoding in %s", token)
	}

	// Fields not set are absent, except the protocol: HTTPS only unless HTTP is asked for.
	token, err = sas.Values{Table: "Employees", Permissions: sas.Permissions{Query: true}, Expiry: mustTime(t, "2030-01-01T00:00:00Z")}.Sign(key)
	if err != nil {
		t.Fatal(err)
	}
	q, _ = url.ParseQuery(token)
	for _, absent := range []string{"st", "sip", "si", "spk", "srk", "epk", "erk"} {
		if q.Has(absent) {
			t.Errorf("unset field %s is in the token %s", absent, token)
		}
	}
	if got := q["spr"]; len(got) != 1 || got[0] != "https" {
		t.Errorf("default protocol: spr = %q, want [https] (a token without spr also works over HTTP)", got)
	}
}

// The signed identifier is one line of the
// string-to-sign; a line break in it would shift every field after it.
func TestIdentifierIsOnePrintableLine(t *testing.T) {
	t.Parallel()
	key, _ := sas.NewSharedKey("myaccount", testKey)
	for _, id := range []string{"policy1\n", "a\nhttps,http", "a\r", "a\x00b", "a\tb", "a\u2028b", "a\u0085b", "\xff"} {
		v := sas.Values{Table: "Employees", Permissions: sas.Permissions{Query: true}, Expiry: mustTime(t, "2030-01-01T00:00:00Z"), Identifier: id}
		if token, err := v.Sign(key); !errors.Is(err, repo.ErrInvalidInput) || token != "" {
			t.Errorf("identifier %q: Sign = %q, %v; want ErrInvalidInput", id, token, err)
		}
		if _, err := v.StringToSign("myaccount"); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("identifier %q: StringToSign: %v; want ErrInvalidInput", id, err)
		}
	}
	for _, id := range []string{"policy 1", "YWJjZGVmZw==", "ümlaut-é", strings.Repeat("é", 64)} {
		v := sas.Values{Table: "Employees", Identifier: id}
		if _, err := v.Sign(key); err != nil {
			t.Errorf("identifier %q refused: %v", id, err)
		}
	}
}

// aztables v1.4.1 signs a key range but leaves it out of the token (DESIGN.md, "Traps"):
// the reason this package exists. If a new aztables fixes it, this test says so.
func TestAztablesDropsTheKeyRange(t *testing.T) {
	t.Parallel()
	cred, err := aztables.NewSharedKeyCredential("myaccount", testKey)
	if err != nil {
		t.Fatal(err)
	}
	token, err := aztables.SASSignatureValues{
		TableName: "Employees", Permissions: "r", ExpiryTime: mustTime(t, "2030-01-01T00:00:00Z"),
		StartPartitionKey: "Sales", EndPartitionKey: "Sales", Protocol: aztables.SASProtocolHTTPS,
	}.Sign(cred)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := url.ParseQuery(token)
	if q.Has("spk") || q.Has("epk") {
		t.Fatalf("aztables now puts the range in the token (%s): the trap of DESIGN.md is fixed upstream; review this package's reason to exist", token)
	}
	key, _ := sas.NewSharedKey("myaccount", testKey)
	ours, _ := sas.Values{Table: "Employees", Permissions: sas.Permissions{Query: true},
		Expiry: mustTime(t, "2030-01-01T00:00:00Z"), Range: sas.Partition("Sales")}.Sign(key)
	oq, _ := url.ParseQuery(ours)
	if oq.Get("spk") != "Sales" || oq.Get("epk") != "Sales" || oq.Get("sig") != q.Get("sig") {
		t.Fatalf("ours %s vs aztables %s: same signature expected, with the range in ours", ours, token)
	}
}

func TestRangeContainsFollowsTheServiceRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		r      sas.Range
		pk, rk string
		want   bool
	}{
		{sas.Range{}, "any", "thing", true},
		{sas.Partition("Sales"), "Sales", "", true},
		{sas.Partition("Sales"), "Sales", "zzz", true},
		{sas.Partition("Sales"), "Sales2", "", false},
		{sas.Partition("Sales"), "Sale", "zzz", false},
		{sas.Range{StartPartitionKey: "M"}, "Marketing", "", true},
		{sas.Range{StartPartitionKey: "M"}, "Finance", "", false},
		{sas.Range{EndPartitionKey: "M"}, "Finance", "", true},
		{sas.Range{EndPartitionKey: "M"}, "Marketing", "", false},
		// startPk, startRk: pk > spk || (pk == spk && rk >= srk)
		{sas.Range{StartPartitionKey: "B", StartRowKey: "5"}, "B", "5", true},
		{sas.Range{StartPartitionKey: "B", StartRowKey: "5"}, "B", "4", false},
		{sas.Range{StartPartitionKey: "B", StartRowKey: "5"}, "C", "0", true},
		{sas.Range{StartPartitionKey: "B", StartRowKey: "5"}, "A", "9", false},
		// endPk, endRk: pk < epk || (pk == epk && rk <= erk)
		{sas.Range{EndPartitionKey: "B", EndRowKey: "5"}, "B", "5", true},
		{sas.Range{EndPartitionKey: "B", EndRowKey: "5"}, "B", "6", false},
		{sas.Range{EndPartitionKey: "B", EndRowKey: "5"}, "A", "9", true},
		{sas.Range{EndPartitionKey: "B", EndRowKey: "5"}, "C", "0", false},
		{sas.RowRange("Coho Winery", "Auburn", "Seattle"), "Coho Winery", "Redmond", true},
		{sas.RowRange("Coho Winery", "Auburn", "Seattle"), "Coho Winery", "Tacoma", false},
		{sas.Entity("Sales", "000123"), "Sales", "000123", true},
		{sas.Entity("Sales", "000123"), "Sales", "0001230", false},
	}
	for _, tc := range cases {
		if got := tc.r.Contains(tc.pk, tc.rk); got != tc.want {
			t.Errorf("%+v.Contains(%q, %q) = %v, want %v", tc.r, tc.pk, tc.rk, got, tc.want)
		}
	}
}

func TestInvalidValuesAreRefused(t *testing.T) {
	t.Parallel()
	key, _ := sas.NewSharedKey("myaccount", testKey)
	exp := time.Now().Add(time.Hour)
	ok := sas.Values{Table: "Employees", Permissions: sas.Permissions{Query: true}, Expiry: exp}
	with := func(f func(v *sas.Values)) sas.Values { v := ok; f(&v); return v }
	cases := map[string]sas.Values{
		"bad table name":      with(func(v *sas.Values) { v.Table = "no-dash" }),
		"reserved table name": with(func(v *sas.Values) { v.Table = "Tables" }),
		"no permissions":      with(func(v *sas.Values) { v.Permissions = sas.Permissions{} }),
		"no expiry":           with(func(v *sas.Values) { v.Expiry = time.Time{} }),
		"start after expiry":  with(func(v *sas.Values) { v.Start = exp.Add(time.Minute) }),
		"http only":           with(func(v *sas.Values) { v.Protocol = "http" }),
		"old version":         with(func(v *sas.Values) { v.Version = "2013-08-15" }),
		"malformed version":   with(func(v *sas.Values) { v.Version = "latest" }),
		"long identifier":     with(func(v *sas.Values) { v.Identifier = strings.Repeat("i", 65) }),
		"ipv6":                with(func(v *sas.Values) { v.IP.Start = netip.MustParseAddr("::1") }),
		"reversed ip range": with(func(v *sas.Values) {
			v.IP = sas.IPRange{netip.MustParseAddr("10.0.0.9"), netip.MustParseAddr("10.0.0.1")}
		}),
		"ip end without start":   with(func(v *sas.Values) { v.IP.End = netip.MustParseAddr("10.0.0.1") }),
		"startrk without pk":     with(func(v *sas.Values) { v.Range = sas.Range{StartRowKey: "a"} }),
		"endrk without pk":       with(func(v *sas.Values) { v.Range = sas.Range{EndRowKey: "a"} }),
		"empty partition range":  with(func(v *sas.Values) { v.Range = sas.PartitionRange("b", "a") }),
		"empty row range":        with(func(v *sas.Values) { v.Range = sas.RowRange("p", "9", "1") }),
		"range bound not a key":  with(func(v *sas.Values) { v.Range = sas.Partition("a/b") }),
		"range bound control ch": with(func(v *sas.Values) { v.Range = sas.Partition("a\x01") }),
	}
	for name, v := range cases {
		if token, err := v.Sign(key); !errors.Is(err, repo.ErrInvalidInput) || token != "" {
			t.Errorf("%s: Sign = %q, %v; want ErrInvalidInput", name, token, err)
		}
	}
	if _, err := ok.Sign(nil); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("nil key: %v", err)
	}
	// A stored access policy may carry the permissions and the expiry.
	if _, err := (sas.Values{Table: "Employees", Identifier: "policy1"}).Sign(key); err != nil {
		t.Errorf("token naming a policy: %v", err)
	}
	for _, bad := range []string{"", "not base64!"} {
		if _, err := sas.NewSharedKey("acct", bad); !errors.Is(err, repo.ErrInvalidInput) || strings.Contains(fmt.Sprint(err), bad+"!") {
			t.Errorf("NewSharedKey(%q) = %v", bad, err)
		}
	}
	if p, err := sas.ParsePermissions("dr"); err != nil || p.String() != "rd" {
		t.Errorf("ParsePermissions(dr) = %v, %v", p, err)
	}
	for _, bad := range []string{"rr", "w", "x"} {
		if _, err := sas.ParsePermissions(bad); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("ParsePermissions(%q) = %v", bad, err)
		}
	}
}

func TestSharedKeyFromConnectionString(t *testing.T) {
	t.Parallel()
	key, endpoint, err := sas.SharedKeyFromConnectionString("DefaultEndpointsProtocol=https;AccountName=myaccount;AccountKey=" + testKey + ";EndpointSuffix=core.windows.net")
	if err != nil || key.AccountName() != "myaccount" || endpoint != "https://myaccount.table.core.windows.net" {
		t.Fatalf("%v %q %v", key, endpoint, err)
	}
	_, endpoint, err = sas.SharedKeyFromConnectionString("AccountName=devstoreaccount1;AccountKey=" + testKey + ";TableEndpoint=http://127.0.0.1:10002/devstoreaccount1/")
	if err != nil || endpoint != "http://127.0.0.1:10002/devstoreaccount1" {
		t.Fatalf("explicit endpoint: %q %v", endpoint, err)
	}
	for _, bad := range []string{
		"AccountName=a;AccountKey=" + testKey, // no endpoint
		"SharedAccessSignature=sv=2019-02-02&sig=x;TableEndpoint=https://a.table.core.windows.net",
		"AccountName=a;AccountKey=" + testKey + ";garbage",
	} {
		_, _, err := sas.SharedKeyFromConnectionString(bad)
		if !errors.Is(err, repo.ErrInvalidInput) || strings.Contains(err.Error(), testKey) {
			t.Errorf("SharedKeyFromConnectionString: %v", err)
		}
	}
	s := fmt.Sprintf("%v %+v %#v %s", key, *key, key, key)
	raw, _ := base64.StdEncoding.DecodeString(testKey)
	if strings.Contains(s, testKey) || strings.Contains(s, fmt.Sprint(raw[:4])[1:8]) {
		t.Fatalf("SharedKey printed its key: %s", s)
	}
}

// Identifiers that would add or hide a line of the string-to-sign, or smuggle a
// parameter into the token: every one is refused, and nothing is signed.
func TestIdentifierLineTricksAreRefusedBeforeSigning(t *testing.T) {
	t.Parallel()
	key, err := sas.NewSharedKey("acct", testKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a\nb", "a\rb", "a\u0085b", "a\u2028b", "a\u2029b", "a\x00b", "a\x7fb", "a\tb", "a\xffb", "\u200b"} {
		v := sas.Values{Table: "Docs", Identifier: id, Expiry: time.Now().Add(time.Hour)}
		if tok, err := v.Sign(key); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("identifier %q: signed %q, %v", id, tok, err)
		}
	}
	// A printable identifier with query syntax stays one escaped parameter.
	v := sas.Values{Table: "Docs", Identifier: "p&sp=raud&sig=x", Expiry: time.Now().Add(time.Hour)}
	tok, err := v.Sign(key)
	if err != nil {
		t.Fatal(err)
	}
	q, err := url.ParseQuery(tok)
	if err != nil || q.Get("si") != "p&sp=raud&sig=x" || len(q["sig"]) != 1 || q.Get("sp") != "" {
		t.Fatalf("token %q parses to %v, %v", tok, q, err)
	}
	// The default protocol is HTTPS only, and is always in the token.
	v = sas.Values{Table: "Docs", Permissions: sas.Permissions{Query: true}, Expiry: time.Now().Add(time.Hour)}
	tok, _ = v.Sign(key)
	if q, _ := url.ParseQuery(tok); q.Get("spr") != "https" {
		t.Fatalf("default spr = %q", q.Get("spr"))
	}
}
