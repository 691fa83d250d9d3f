package account_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// A real-looking account key (64 bytes of base64); the tests check it is never quoted.
const goodKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

// A connection string with a misspelled key, a malformed value or a truncated secret is
// refused with an InvalidInputError whose Field names the key, and the error quotes
// neither the key nor the signature.
func TestConnectionStringRefusesUnknownKeysAndMalformedValues(t *testing.T) {
	t.Parallel()
	base := "AccountName=myaccount;AccountKey=" + goodKey
	for _, c := range []struct {
		cs, key string
	}{
		{base + ";TableEndpont=https://tables.example.com", "TableEndpont"},
		{"DefaultEndpointsProtocol=htp;" + base, "DefaultEndpointsProtocol"},
		{"AccountName=myaccount;AccountKey=" + goodKey[:50], "AccountKey"},
		{"AccountName=myaccount;AccountKey=" + goodKey[:40] + "!!!!", "AccountKey"},
		{"AccountName=myaccount;AccountKey=", "AccountKey"},
		{base + ";EndpointSuffix=core.windows.net/evil", "EndpointSuffix"},
		{base + ";TableEndpoint=ftp://tables.example.com", "TableEndpoint"},
		{base + ";TableEndpoint=https://tables.example.com?sig=SIGSECRET", "TableEndpoint"},
		{base + ";BlobEndpoint=tables.example.com", "BlobEndpoint"},
		{base + ";QueueSecondaryEndpoint=::", "QueueSecondaryEndpoint"},
		{base + ";UseDevelopmentStorage=yes", "UseDevelopmentStorage"},
		{base + ";AccountName=other", "AccountName"},
		{"AccountName=myaccount;SharedAccessSignature=sv=2020-01-01&se=2030", "SharedAccessSignature"},
		{"AccountName=myaccount;SharedAccessSignature=sv=2020&sig=SIGSECRET;AccountKey=" + goodKey, "SharedAccessSignature"},
		{"AccountKey=" + goodKey, "AccountName"},
	} {
		_, err := account.NewClients(c.cs, nil)
		var ie *repo.InvalidInputError
		if !errors.As(err, &ie) || !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%.60s...: %v, want an InvalidInputError", c.cs, err)
			continue
		}
		if !strings.Contains(ie.Field, c.key) {
			t.Errorf("%.60s...: error names %q, want the key %s: %v", c.cs, ie.Field, c.key, err)
		}
		if msg := err.Error(); strings.Contains(msg, goodKey[:40]) || strings.Contains(msg, "SIGSECRET") {
			t.Errorf("%.60s...: error quotes a secret: %v", c.cs, err)
		}
	}
}

// recorder is a transport that records the host of every request and fails it.
type recorder struct {
	mu    sync.Mutex
	hosts []string
}

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.hosts = append(r.hosts, req.URL.Scheme+"://"+req.URL.Host)
	r.mu.Unlock()
	return nil, errors.New("recorded")
}

var _ policy.Transporter = (*recorder)(nil)

// A connection string that names an explicit endpoint is served at that endpoint only: the
// clients of the services it names no endpoint for are left out (nil), and none addresses
// the account's public endpoint.
func TestConnectionStringWithExplicitEndpointsNeverAddressesPublicEndpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name, cs           string
		table, queue, blob string // the host each client must address; "" = no client
	}{
		{"sas with a table endpoint", "TableEndpoint=https://tables.example.com;SharedAccessSignature=sv=2020&sig=SIGSECRET",
			"https://tables.example.com", "", ""},
		{"key with a blob endpoint only", "AccountName=myaccount;AccountKey=" + goodKey + ";BlobEndpoint=http://127.0.0.1:10000/myaccount",
			"", "", "http://127.0.0.1:10000"},
		{"account name, sas and a queue endpoint", "AccountName=myaccount;QueueEndpoint=https://q.example.com;SharedAccessSignature=sv=2020&sig=SIGSECRET",
			"", "https://q.example.com", ""},
		{"no endpoint: the public ones", "DefaultEndpointsProtocol=https;AccountName=myaccount;AccountKey=" + goodKey + ";EndpointSuffix=core.chinacloudapi.cn",
			"https://myaccount.table.core.chinacloudapi.cn", "https://myaccount.queue.core.chinacloudapi.cn", "https://myaccount.blob.core.chinacloudapi.cn"},
		{"development storage", "UseDevelopmentStorage=true",
			"http://127.0.0.1:10002", "http://127.0.0.1:10001", "http://127.0.0.1:10000"},
	} {
		rec := &recorder{}
		cl, err := account.NewClients(c.cs, &account.ClientOptions{Transport: rec})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		check := func(service string, present bool, want string, send func()) {
			if (want != "") != present {
				t.Errorf("%s: %s client present=%v, want %v", c.name, service, present, want != "")
				return
			}
			if !present {
				return
			}
			rec.hosts = nil
			send()
			if len(rec.hosts) == 0 || rec.hosts[0] != want {
				t.Errorf("%s: the %s client addressed %v, want %s", c.name, service, rec.hosts, want)
			}
		}
		check("table", cl.Tables != nil, c.table, func() { _, _ = cl.Tables.NewClient("tbl").GetEntity(ctx, "p", "r", nil) })
		check("queue", cl.Queues != nil, c.queue, func() { _, _ = cl.Queues.NewQueueClient("q").GetProperties(ctx, nil) })
		check("blob", cl.Blobs != nil, c.blob, func() { _, _ = cl.Blobs.ServiceClient().GetProperties(ctx, nil) })
	}
}
