package repo

import (
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/retry"
)

// ClientOptions configures the clients tablepatterns builds (NewTablesWithSAS here,
// account.NewClients and account.NewTokenClients). The zero value (or nil) is the default.
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

// AzureOptions returns the Azure SDK options tablepatterns builds a client of service
// ("table", "queue" or "blob") with: o.Azure (with o.Transport), the SDK's retries off,
// request metrics, and, for queue and blob clients, a retry.Gate (a table client gets its
// Gate from TableClientOptions, through which its options must then go). nil o gives the
// defaults.
func (o *ClientOptions) AzureOptions(service string) azcore.ClientOptions {
	b := withMetrics(o.base(), service)
	if service != "table" {
		b = withGate(b)
	}
	return b
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
