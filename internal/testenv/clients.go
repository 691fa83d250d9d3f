package testenv

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// ClientOptions returns the azcore options testenv builds clients with: the SDK's own
// retries are off (MaxRetries -1; 0 would mean "default 3"), so that a test sees every
// failure and counts every request.
func ClientOptions() policy.ClientOptions {
	return policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}
}

// TableService returns a raw aztables service client on the account of this test binary.
func TableService(t testing.TB) *aztables.ServiceClient {
	t.Helper()
	return TableServiceFrom(t, ConnectionString(t))
}

// TableServiceFrom returns a raw aztables service client for connectionString (for example
// one from Proxies). It fails the test if the string is malformed.
func TableServiceFrom(t testing.TB, connectionString string) *aztables.ServiceClient {
	t.Helper()
	c, err := aztables.NewServiceClientFromConnectionString(connectionString, &aztables.ClientOptions{ClientOptions: ClientOptions()})
	if err != nil {
		t.Fatalf("testenv: table service client: %v", err)
	}
	return c
}

// Table creates the table name and returns a raw client for it; t.Cleanup deletes the table.
// Pass a name from TableName. It fails the test if the table cannot be created.
func Table(t testing.TB, name string) *aztables.Client {
	t.Helper()
	svc := TableService(t)
	if err := createTable(t, svc, name); err != nil {
		t.Fatalf("testenv: create table %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := cleanupContext()
		defer cancel()
		if err := deleteTable(ctx, svc, name); err != nil && !isNotFound(err) {
			t.Errorf("testenv: delete table %s: %v", name, err)
		}
	})
	return svc.NewClient(name)
}

// QueueService returns a raw azqueue service client on the account of this test binary.
func QueueService(t testing.TB) *azqueue.ServiceClient {
	t.Helper()
	return QueueServiceFrom(t, ConnectionString(t))
}

// QueueServiceFrom returns a raw azqueue service client for connectionString. It fails the
// test if the string is malformed.
func QueueServiceFrom(t testing.TB, connectionString string) *azqueue.ServiceClient {
	t.Helper()
	c, err := azqueue.NewServiceClientFromConnectionString(connectionString, &azqueue.ClientOptions{ClientOptions: ClientOptions()})
	if err != nil {
		t.Fatalf("testenv: queue service client: %v", err)
	}
	return c
}

// BlobService returns a raw azblob client on the account of this test binary.
func BlobService(t testing.TB) *azblob.Client {
	t.Helper()
	return BlobServiceFrom(t, ConnectionString(t))
}

// BlobServiceFrom returns a raw azblob client for connectionString. It fails the test if the
// string is malformed.
func BlobServiceFrom(t testing.TB, connectionString string) *azblob.Client {
	t.Helper()
	c, err := azblob.NewClientFromConnectionString(connectionString, &azblob.ClientOptions{ClientOptions: ClientOptions()})
	if err != nil {
		t.Fatalf("testenv: blob client: %v", err)
	}
	return c
}

// ProxySet is one fault proxy per service of the test account, from Proxies.
type ProxySet struct {
	// Table, Queue and Blob sit in front of the account's table, queue and blob endpoints.
	Table, Queue, Blob *faultproxy.Proxy
	// ConnectionString routes all three services through the proxies. It holds the account
	// key: do not log it.
	ConnectionString string
}

// Proxies starts a fault proxy in front of each service of the test account and closes them
// in t.Cleanup. Build clients on ProxySet.ConnectionString (TableServiceFrom, ...) and steer
// the proxies with rules; requests made with the plain clients bypass them.
func Proxies(t testing.TB) *ProxySet {
	t.Helper()
	s := Server(t)
	ps := &ProxySet{}
	ps.Table, ps.Queue, ps.Blob = proxyFor(t, s.TableURL), proxyFor(t, s.QueueURL), proxyFor(t, s.BlobURL)
	ps.ConnectionString = s.ConnectionStringWith(proxied(ps.Table, s.TableURL), proxied(ps.Queue, s.QueueURL), proxied(ps.Blob, s.BlobURL))
	return ps
}

// proxyFor starts a proxy for the scheme and host of endpoint.
func proxyFor(t testing.TB, endpoint string) *faultproxy.Proxy {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		t.Fatalf("testenv: endpoint %q is not a URL", endpoint)
	}
	p, err := faultproxy.New(u.Scheme + "://" + u.Host)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// proxied is endpoint with its scheme and host replaced by the proxy's, keeping the path
// (the account name, for path-style endpoints).
func proxied(p *faultproxy.Proxy, endpoint string) string {
	u, _ := url.Parse(endpoint) // already parsed by proxyFor
	return p.URL() + u.Path
}

// isNotFound reports a 404 from the service.
// createTable creates the table name, sending the request again when the connection
// failed without an answer (a busy Azurite resets a keep-alive connection it is closing).
// The name is the test's own, so TableAlreadyExists after such a failure is the earlier
// request's table.
func createTable(t testing.TB, svc *aztables.ServiceClient, name string) error {
	var err error
	for attempt := range 5 {
		_, err = svc.CreateTable(t.Context(), name, nil)
		var re *azcore.ResponseError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &re):
			if attempt > 0 && re.ErrorCode == "TableAlreadyExists" {
				return nil
			}
			return err
		case t.Context().Err() != nil:
			return err
		}
	}
	return err
}

// deleteTable deletes the table name, sending the request again when the connection
// failed without an answer, as createTable does; NotFound after such a failure is the
// earlier request's delete.
func deleteTable(ctx context.Context, svc *aztables.ServiceClient, name string) error {
	var err error
	for range 5 {
		_, err = svc.DeleteTable(ctx, name, nil)
		var re *azcore.ResponseError
		if err == nil || errors.As(err, &re) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func isNotFound(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound
}
