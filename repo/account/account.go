// Package account builds the Azure SDK clients of one storage account the way tablepatterns
// needs them: the Table, Queue and Blob service clients together, from a connection string
// or from service endpoints and a Microsoft Entra ID token credential. It is apart from
// package repo so that a program that uses tables only imports no queue or blob package
// (see BENCHMARKS.md, "A lighter import"); repo.TableClientOptions and
// aztables.NewServiceClient build a table client alone.
//
// Every client is built with the Azure SDK's own retries off (package retry owns retries),
// request metrics, and a retry.Gate that calms the client under sustained throttling; the
// table client also carries the transaction policy that repo.Submit needs.
package account

import (
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablepatterns/tablepatterns/internal/connstring"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

// ClientOptions configures NewClients and NewTokenClients: repo's client options.
type ClientOptions = repo.ClientOptions

// Clients are the Azure SDK clients of one storage account, built from one connection
// string the way tablepatterns needs them: the Azure SDK's own retry policy is turned off
// (retries belong to package retry, see its doc), and the table client carries the
// transaction policy that lets Submit read per-action results.
type Clients struct {
	// Tables is the Table service client; pass it to New. nil without a table endpoint
	// (NewTokenClients, or a connection string that names other endpoints only).
	Tables *aztables.ServiceClient
	// Queues is the Queue service client (for queueworker); nil without a queue
	// endpoint.
	Queues *azqueue.ServiceClient
	// Blobs is the Blob service client (for blob-backed patterns); nil without a blob
	// endpoint.
	Blobs *azblob.Client
}

// NewClients builds the service clients of a storage connection string. Nothing is sent.
// Accounts with shared-key access turned off need NewTokenClients.
//
// The string is checked before anything is built: every key must be one of Azure
// Storage's connection-string keys (DefaultEndpointsProtocol, AccountName, AccountKey,
// SharedAccessSignature, EndpointSuffix, BlobEndpoint, QueueEndpoint, TableEndpoint,
// FileEndpoint, their *SecondaryEndpoint forms, UseDevelopmentStorage,
// DevelopmentStorageProxyUri; case-insensitive), given once, with a well-formed value: the
// protocol http or https, the key valid base64, a SAS with its signature, endpoints http(s)
// URLs without a query. Exactly one credential: AccountName with AccountKey, or a
// SharedAccessSignature.
//
// A string that names any explicit endpoint (TableEndpoint, QueueEndpoint, BlobEndpoint,
// FileEndpoint) is served at the endpoints it names only: the client of a service without
// an endpoint is nil, never one of the account's public endpoints. A string without
// endpoints addresses PROTOCOL://ACCOUNT.SERVICE.SUFFIX (https, core.windows.net by
// default). UseDevelopmentStorage=true is the local emulator's account on 127.0.0.1 (or the
// host of DevelopmentStorageProxyUri), ports 10000 to 10002. Secondary endpoints are checked
// (each needs its primary) and not used.
//
// The connection string is a secret: it is never logged, and errors quote neither the key
// nor the signature.
//
// Errors: an *InvalidInputError (ErrInvalidInput) whose Field names the offending key
// ("connection string TableEndpont").
func NewClients(connectionString string, opts *ClientOptions) (*Clients, error) {
	cs, err := connstring.Parse(connectionString)
	if err != nil {
		return nil, err
	}
	var c Clients
	if cs.Table != "" {
		o := repo.TableClientOptions(&aztables.ClientOptions{ClientOptions: opts.AzureOptions("table")})
		if cs.AccountKey != "" {
			cred, err := aztables.NewSharedKeyCredential(cs.AccountName, cs.AccountKey)
			if err == nil {
				c.Tables, err = aztables.NewServiceClientWithSharedKey(cs.Table, cred, o)
			}
			if err != nil {
				return nil, connStringError("table")
			}
		} else if c.Tables, err = aztables.NewServiceClientWithNoCredential(withSAS(cs.Table, cs.SAS), o); err != nil {
			return nil, connStringError("table")
		}
	}
	if cs.Queue != "" {
		o := &azqueue.ClientOptions{ClientOptions: opts.AzureOptions("queue")}
		if cs.AccountKey != "" {
			cred, err := azqueue.NewSharedKeyCredential(cs.AccountName, cs.AccountKey)
			if err == nil {
				c.Queues, err = azqueue.NewServiceClientWithSharedKeyCredential(cs.Queue, cred, o)
			}
			if err != nil {
				return nil, connStringError("queue")
			}
		} else if c.Queues, err = azqueue.NewServiceClientWithNoCredential(withSAS(cs.Queue, cs.SAS), o); err != nil {
			return nil, connStringError("queue")
		}
	}
	if cs.Blob != "" {
		o := &azblob.ClientOptions{ClientOptions: opts.AzureOptions("blob")}
		if cs.AccountKey != "" {
			cred, err := azblob.NewSharedKeyCredential(cs.AccountName, cs.AccountKey)
			if err == nil {
				c.Blobs, err = azblob.NewClientWithSharedKeyCredential(cs.Blob, cred, o)
			}
			if err != nil {
				return nil, connStringError("blob")
			}
		} else if c.Blobs, err = azblob.NewClientWithNoCredential(withSAS(cs.Blob, cs.SAS), o); err != nil {
			return nil, connStringError("blob")
		}
	}
	return &c, nil
}

// withSAS appends a SAS to a service URL, after a slash as the Azure SDKs do.
func withSAS(endpoint, sas string) string {
	if !strings.HasSuffix(endpoint, "/") {
		endpoint += "/"
	}
	return endpoint + "?" + sas
}

// connStringError reports a client the Azure SDK refused to build, without echoing the
// connection string: the SDK's errors may quote parts of it.
func connStringError(service string) error {
	return errs.Invalid("connection string", "the %s client cannot be built from it", service)
}

// Endpoints are the service URLs of one storage account, such as
// https://myaccount.table.core.windows.net. An empty URL leaves that client out.
type Endpoints struct {
	// Table is the Table service URL.
	Table string
	// Queue is the Queue service URL.
	Queue string
	// Blob is the Blob service URL.
	Blob string
}

// DefaultEndpointSuffix is the endpoint suffix of storage accounts in the Azure public
// cloud.
const DefaultEndpointSuffix = connstring.DefaultEndpointSuffix

// PublicEndpoints returns the endpoints of a storage account in the cloud whose storage
// endpoint suffix is suffix ("" means DefaultEndpointSuffix; "core.chinacloudapi.cn",
// "core.usgovcloudapi.net" for sovereign clouds): https://ACCOUNT.table.SUFFIX and so on.
//
// Errors: ErrInvalidInput if account is not 3 to 24 lowercase letters and digits, or suffix
// is not a host name.
func PublicEndpoints(account, suffix string) (Endpoints, error) {
	if !connstring.ValidAccountName(account) {
		return Endpoints{}, errs.Invalid("account", "%.40q is not a storage account name (3 to 24 lowercase letters and digits)", account)
	}
	if suffix == "" {
		suffix = DefaultEndpointSuffix
	}
	if u, err := url.Parse("https://x." + suffix); err != nil || u.Host != "x."+suffix || !connstring.ValidSuffix(suffix) {
		// Not quoted: a pasted URL or connection string may follow the suffix.
		return Endpoints{}, errs.Invalid("endpoint suffix", "is not a host name suffix such as core.windows.net")
	}
	return Endpoints{
		Table: "https://" + account + ".table." + suffix,
		Queue: "https://" + account + ".queue." + suffix,
		Blob:  "https://" + account + ".blob." + suffix,
	}, nil
}

// NewTokenClients builds the service clients of the non-empty endpoints with a Microsoft
// Entra ID token credential (azidentity.DefaultAzureCredential, a managed identity, a
// workload identity, ...) instead of an account key, for accounts where shared-key access
// is turned off. The clients are built like NewClients builds them: the Azure SDK's own
// retries off, the table client with the transaction policy (repo.TableClientOptions). Clients
// of empty endpoints are nil. Nothing is sent; the credential is first asked for a token
// by the first request.
//
// The identity needs data-plane roles on the account: "Storage Table Data Contributor",
// "Storage Queue Data Contributor" and "Storage Blob Data Contributor" (or their Reader
// roles for read-only use). Everything in tablepatterns works with a token except what
// signs with the account key itself: table SAS tokens (package repo/sas) need a
// sas.SharedKey, which a token credential cannot provide.
//
// Errors: ErrInvalidInput if cred is nil, no endpoint is given, or an endpoint is not an
// https URL (bearer tokens are never sent over plain HTTP).
func NewTokenClients(endpoints Endpoints, cred azcore.TokenCredential, opts *ClientOptions) (*Clients, error) {
	if cred == nil {
		return nil, errs.Invalid("credential", "is nil")
	}
	if endpoints == (Endpoints{}) {
		return nil, errs.Invalid("endpoints", "none given")
	}
	for _, e := range []struct{ name, url string }{{"table", endpoints.Table}, {"queue", endpoints.Queue}, {"blob", endpoints.Blob}} {
		if e.url == "" {
			continue
		}
		u, err := url.Parse(e.url)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.User != nil {
			// The URL is not quoted: a pasted SAS URL would carry its signature.
			return nil, errs.Invalid(e.name+" endpoint", "is not an https URL without a query (bearer tokens need TLS)")
		}
	}
	var c Clients
	var err error
	if endpoints.Table != "" {
		if c.Tables, err = aztables.NewServiceClient(endpoints.Table, cred, repo.TableClientOptions(&aztables.ClientOptions{ClientOptions: opts.AzureOptions("table")})); err != nil {
			return nil, errs.Invalid("table endpoint", "the table client cannot be built: %v", err)
		}
	}
	if endpoints.Queue != "" {
		if c.Queues, err = azqueue.NewServiceClient(endpoints.Queue, cred, &azqueue.ClientOptions{ClientOptions: opts.AzureOptions("queue")}); err != nil {
			return nil, errs.Invalid("queue endpoint", "the queue client cannot be built: %v", err)
		}
	}
	if endpoints.Blob != "" {
		if c.Blobs, err = azblob.NewClient(endpoints.Blob, cred, &azblob.ClientOptions{ClientOptions: opts.AzureOptions("blob")}); err != nil {
			return nil, errs.Invalid("blob endpoint", "the blob client cannot be built: %v", err)
		}
	}
	return &c, nil
}
