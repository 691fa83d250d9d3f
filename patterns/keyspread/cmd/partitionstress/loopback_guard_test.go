package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/azurite"
)

// Host spellings that a resolver or another parser may take for loopback, or that reach a
// remote host while looking local. Each must be refused by the guard (the tool
// never talks to a host it did not judge loopback), with and without the throughput model.
func TestGuardRefusesHostsThatOnlyLookLoopback(t *testing.T) {
	t.Parallel()
	key := azurite.DevAccountKey
	hosts := []string{
		"localhost.",             // trailing dot: a FQDN, resolved through search rules
		"localhost.evil.example", // lookalike
		"127.0.0.1.nip.io",       // wildcard DNS to loopback: a name, not a literal
		"0x7f.0.0.1",             // inet_aton spellings
		"2130706433",             // decimal IPv4
		"127.1",                  // short form
		"0177.0.0.1",             // octal
		"0.0.0.0",                // all interfaces, not loopback
		"\u0031\u0032\u0037.0.0.1\u3002evil.example", // ideographic full stop
		"xn--localhost-7za",                          // punycode lookalike
		"evil.example#@127.0.0.1",                    // fragment/userinfo confusion
		"127.0.0.1:10002@evil.example",               // userinfo
		"[::1%25evil.example]",                       // zone id
	}
	cfg := config{Duration: time.Second, Ops: 10, Workers: 1, Preload: 1, Partition: "P", Mix: "insert=1", Target: 500}
	for _, h := range hosts {
		cs := "DefaultEndpointsProtocol=http;AccountName=prod;AccountKey=" + key + ";TableEndpoint=http://" + h + "/prod"
		_, err := run(t.Context(), &strings.Builder{}, cs, cfg)
		if err == nil || !errors.Is(err, errNotLoopback) && !strings.Contains(err.Error(), "invalid") && !strings.Contains(err.Error(), "parse") {
			t.Errorf("%s: err = %v, want the guard's refusal", h, err)
		}
		m := cfg
		m.ModelRate = 100
		if _, err := run(t.Context(), &strings.Builder{}, cs, m); err == nil {
			t.Errorf("%s with -model-rate: accepted", h)
		}
	}
}

// A loopback endpoint that redirects to a remote host. The guard sits in the
// transport, so the redirected request is judged too; nothing reaches the remote host.
func TestGuardJudgesEveryRedirect(t *testing.T) {
	t.Parallel()
	var remoteHits int
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { remoteHits++ }))
	defer remote.Close()
	// The "remote" is itself on loopback in a test: redirect to a name for it instead.
	target := strings.Replace(remote.URL, "127.0.0.1", "remote.invalid", 1)
	redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redir.Close()
	cs := "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + azurite.DevAccountKey + ";TableEndpoint=" + redir.URL + "/devstoreaccount1"
	cfg := config{Duration: time.Second, Ops: 10, Workers: 1, Preload: 1, Partition: "P", Mix: "insert=1", Target: 500}
	_, err := run(t.Context(), &strings.Builder{}, cs, cfg)
	if err == nil {
		t.Fatal("a redirecting endpoint was accepted")
	}
	if !errors.Is(err, errNotLoopback) {
		t.Logf("err = %v", err)
	}
	if remoteHits != 0 {
		t.Fatalf("the redirect target got %d requests", remoteHits)
	}
}
