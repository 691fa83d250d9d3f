package sas_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/sas"
)

// Attack: identifiers that would add or hide a line of the string-to-sign, or smuggle a
// parameter into the token: every one is refused, and nothing is signed.
func TestAttackIdentifierLineTricks(t *testing.T) {
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

// Attack: service URLs that look loopback to one reader and are not, or that smuggle a
// host: NewTablesWithSAS refuses plain http to each unless AllowHTTP.
func TestAttackNewTablesWithSASHostTricks(t *testing.T) {
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
