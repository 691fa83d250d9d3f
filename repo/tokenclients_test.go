package repo_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

// Inserts, reads, queries and a transaction over bearer tokens on Azurite's HTTPS endpoints,
// with clients that were never given the account key.
func TestTokenClientsEndToEnd(t *testing.T) {
	t.Parallel()
	s := testenv.OAuthServer(t)
	cred := &tabletest.Credential{}
	clients, err := account.NewTokenClients(account.Endpoints{Table: s.TableURL, Queue: s.QueueURL, Blob: s.BlobURL},
		cred, &repo.ClientOptions{Azure: policy.ClientOptions{Transport: s.HTTPClient()}})
	if err != nil {
		t.Fatal(err)
	}
	if clients.Tables == nil || clients.Queues == nil || clients.Blobs == nil {
		t.Fatalf("clients %+v: want all three", clients)
	}
	ctx := t.Context()
	emps, err := repo.New[Employee](clients.Tables, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := emps.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emps.DeleteTable(context.Background()) })
	if err := emps.Insert(ctx, employee("Sales", "1")); err != nil {
		t.Fatal(err)
	}
	a, b := employee("Sales", "2"), employee("Sales", "3")
	etags, err := repo.Submit(ctx, emps.InsertAction(a), emps.InsertAction(b))
	if err != nil {
		t.Fatal(err)
	}
	if etags[0] == "" || a.ETag == "" {
		t.Errorf("transaction over a token client returned no ETags (%q): the transaction policy is missing", etags)
	}
	n := 0
	for _, err := range emps.Query(ctx, repo.Query{Filter: filter.PartitionKey("Sales")}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("query found %d, want 3", n)
	}
	if cred.Issued() == 0 {
		t.Fatal("no token issued: the clients did not authenticate with the credential")
	}
}

// The server checks the token: an expired one is refused, so the test above proves token
// authentication and not anonymous access.
func TestTokenClientsExpiredTokenRefused(t *testing.T) {
	t.Parallel()
	s := testenv.OAuthServer(t)
	clients, err := account.NewTokenClients(account.Endpoints{Table: s.TableURL},
		&tabletest.Credential{Lifetime: -time.Minute}, &repo.ClientOptions{Transport: s.HTTPClient()})
	if err != nil {
		t.Fatal(err)
	}
	emps, err := repo.New[Employee](clients.Tables, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := emps.CreateIfNotExists(t.Context()); err == nil {
		t.Fatal("an expired token created a table")
	}
	if clients.Queues != nil || clients.Blobs != nil {
		t.Error("clients built for endpoints that were not given")
	}
}

func TestNewTokenClientsRefusesBadInput(t *testing.T) {
	t.Parallel()
	cred := &tabletest.Credential{}
	for name, tc := range map[string]struct {
		e    account.Endpoints
		cred *tabletest.Credential
	}{
		"no endpoints":   {cred: cred},
		"nil credential": {e: account.Endpoints{Table: "https://a.table.core.windows.net"}},
		"http":           {e: account.Endpoints{Table: "http://127.0.0.1:10002/devstoreaccount1"}, cred: cred},
		"query":          {e: account.Endpoints{Blob: "https://a.blob.core.windows.net/?sig=SECRET"}, cred: cred},
		"not a url":      {e: account.Endpoints{Queue: "a.queue.core.windows.net"}, cred: cred},
	} {
		var err error
		if tc.cred == nil {
			_, err = account.NewTokenClients(tc.e, nil, nil)
		} else {
			_, err = account.NewTokenClients(tc.e, tc.cred, nil)
		}
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: err = %v, want ErrInvalidInput", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: the error quotes the URL's query: %v", name, err)
		}
		if cred.Issued() != 0 {
			t.Errorf("%s: a token was requested", name)
		}
	}
}

func TestAccountEndpoints(t *testing.T) {
	t.Parallel()
	e, err := account.PublicEndpoints("orders01", "")
	if err != nil {
		t.Fatal(err)
	}
	if e.Table != "https://orders01.table.core.windows.net" || e.Queue != "https://orders01.queue.core.windows.net" || e.Blob != "https://orders01.blob.core.windows.net" {
		t.Errorf("endpoints %+v", e)
	}
	if e, _ := account.PublicEndpoints("orders01", "core.chinacloudapi.cn"); e.Table != "https://orders01.table.core.chinacloudapi.cn" {
		t.Errorf("sovereign suffix: %+v", e)
	}
	for _, bad := range [][2]string{{"Orders", ""}, {"ab", ""}, {"a-b-c", ""}, {"orders01", "evil.com/x"}, {"orders01", "x@y"}} {
		if _, err := account.PublicEndpoints(bad[0], bad[1]); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("AccountEndpoints(%q, %q): %v, want ErrInvalidInput", bad[0], bad[1], err)
		}
	}
}
