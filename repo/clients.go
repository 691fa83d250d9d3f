package repo

import (
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Clients are the Azure SDK clients of one storage account, built from one connection
// string the way tablepatterns needs them: the Azure SDK's own retry policy is turned off
// (retries belong to package retry, see its doc), and the table client carries the
// transaction policy that lets Submit read per-action results.
type Clients struct {
	// Tables is the Table service client; pass it to New. nil from NewTokenClients
	// without a table endpoint.
	Tables *aztables.ServiceClient
	// Queues is the Queue service client (for queueworker); nil from NewTokenClients
	// without a queue endpoint.
	Queues *azqueue.ServiceClient
	// Blobs is the Blob service client (for blob-backed patterns); nil from
	// NewTokenClients without a blob endpoint.
	Blobs *azblob.Client
}

// ClientOptions configures NewClients and NewTokenClients. The zero value (or nil) is the
// default.
type ClientOptions struct {
	// Transport replaces the HTTP transport of all three clients (nil: Azure.Transport, or
	// the Azure SDK default).
	Transport policy.Transporter
	// AllowHTTP lets NewTablesWithSAS send its token over plain HTTP to a host that is not
	// loopback. Defaults to false: https only (loopback, the emulator, is always allowed).
	// NewClients and NewTokenClients ignore it.
	AllowHTTP bool
	// Azure are the Azure SDK's client options of all three clients: telemetry, logging,
	// tracing (TracingProvider: azotel.NewTracingProvider for OpenTelemetry), cloud
	// configuration, transport, extra policies. Retry is ignored: the SDK's retries are
	// always off (MaxRetries -1), because package retry owns retries. Defaults to the
	// SDK's defaults.
	Azure policy.ClientOptions
}

// base returns the azcore options every client is built with.
func (o *ClientOptions) base() azcore.ClientOptions {
	var b azcore.ClientOptions
	if o != nil {
		b = o.Azure
		if o.Transport != nil {
			b.Transport = o.Transport
		}
	}
	b.Retry = policy.RetryOptions{MaxRetries: -1}
	return b
}

// NewClients builds the three service clients from a storage connection string
// (AccountName/AccountKey with endpoints, or a SAS connection string). Nothing is sent.
// Accounts with shared-key access turned off need NewTokenClients.
//
// The connection string is a secret: it is never logged, and errors do not contain it.
// Errors: ErrInvalidInput if the connection string cannot be parsed by the Azure SDK.
func NewClients(connectionString string, opts *ClientOptions) (*Clients, error) {
	base := opts.base()
	tables, err := aztables.NewServiceClientFromConnectionString(connectionString, TableClientOptions(&aztables.ClientOptions{ClientOptions: withMetrics(base, "table")}))
	if err != nil {
		return nil, connStringError("table")
	}
	queues, err := azqueue.NewServiceClientFromConnectionString(connectionString, &azqueue.ClientOptions{ClientOptions: withGate(withMetrics(base, "queue"))})
	if err != nil {
		return nil, connStringError("queue")
	}
	blobs, err := azblob.NewClientFromConnectionString(connectionString, &azblob.ClientOptions{ClientOptions: withGate(withMetrics(base, "blob"))})
	if err != nil {
		return nil, connStringError("blob")
	}
	return &Clients{Tables: tables, Queues: queues, Blobs: blobs}, nil
}

// connStringError reports a bad connection string without echoing it: the Azure SDK's
// parse errors may quote parts of it, and it contains the account key.
func connStringError(service string) error {
	return errs.Invalid("connection string", "the %s client cannot be built from it (check its AccountName, AccountKey/SharedAccessSignature and endpoints)", service)
}

// TableClientOptions returns options for building an aztables client by hand (for example
// with a token credential) that work with this package: the Azure SDK's retries are turned
// off and the transaction policy is installed. base may be nil; it is copied, not changed.
//
// A table client built without these options still works with New, but then the Azure
// SDK retries beneath package retry (up to 4 tries per retry: see retry's doc), Submit
// cannot return per-action ETags, and transactions that update or delete entities whose
// keys contain a single quote fail, because aztables v1.4.1 does not escape them.
func TableClientOptions(base *aztables.ClientOptions) *aztables.ClientOptions {
	var o aztables.ClientOptions
	if base != nil {
		o = *base
	}
	o.Retry.MaxRetries = -1
	o.PerCallPolicies = append(append([]policy.Policy(nil), o.PerCallPolicies...), batchPolicy{})
	o.ClientOptions = withGate(o.ClientOptions)
	return &o
}

// withGate returns o with a fresh retry.Gate among its per-retry policies: one send rate
// per client, cut when the service throttles it (see retry.Gate), so that sustained
// throttling does not turn into a retry storm.
func withGate(o azcore.ClientOptions) azcore.ClientOptions {
	g, _ := retry.NewGate(nil) // the defaults are valid
	o.PerRetryPolicies = append(append([]policy.Policy(nil), o.PerRetryPolicies...), g)
	return o
}
