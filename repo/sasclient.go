package repo

import (
	"net/netip"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// NewTablesWithSAS builds a Table service client authorized by a SAS token instead of the
// account key: a token from package repo/sas (a service SAS for one table, possibly
// limited to a key range), or any account SAS for tables. serviceURL is the table service
// endpoint (https://ACCOUNT.table.core.windows.net, or Azurite's
// http://127.0.0.1:10002/devstoreaccount1); token is the query string, with or without a
// leading "?". The client is built like NewClients' (the Azure SDK's retries off, the
// transaction policy installed): pass it to New. Nothing is sent.
//
// The token is a secret: it is never logged, and errors do not contain it (azcore
// redacts the query of the URLs it reports). Requests the
// token does not allow fail with a 403 *Error (AuthorizationPermissionMismatch,
// AuthenticationFailed for an expired token, ...), which is not retried.
//
// The token travels with every request, so serviceURL must be https, except for a
// loopback host (localhost, 127.0.0.0/8, ::1: the emulator) or when
// ClientOptions.AllowHTTP opts in. A token for plain HTTP must also have been signed with
// sas.HTTPSAndHTTP (tokens are HTTPS-only by default).
//
// Errors: ErrInvalidInput for a URL that is not http(s) with a host, an http URL to a host
// that is not loopback without AllowHTTP, an empty token, or a token that is not a query
// string.
func NewTablesWithSAS(serviceURL, token string, opts *ClientOptions) (*aztables.ServiceClient, error) {
	if opts == nil {
		opts = &ClientOptions{}
	}
	u, err := url.Parse(serviceURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.User != nil {
		return nil, errs.Invalid("service URL", "must be an http(s) table service endpoint without a query")
	}
	if u.Scheme == "http" && !opts.AllowHTTP && !isLoopback(u.Hostname()) {
		return nil, errs.Invalid("service URL", "is plain http to a host that is not loopback: the SAS token would travel in clear text (use https, or set ClientOptions.AllowHTTP)")
	}
	token = strings.TrimPrefix(token, "?")
	if token == "" {
		return nil, errs.Invalid("SAS token", "is empty")
	}
	if q, err := url.ParseQuery(token); err != nil || q.Get("sig") == "" {
		return nil, errs.Invalid("SAS token", "is not a SAS query string (it needs a sig parameter)")
	}
	base := azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}, Transport: opts.Transport}
	// aztables joins request paths before the query of the service URL, which keeps the
	// token on every request.
	svc, err := aztables.NewServiceClientWithNoCredential(strings.TrimRight(serviceURL, "/")+"?"+token,
		TableClientOptions(&aztables.ClientOptions{ClientOptions: base}))
	if err != nil {
		return nil, errs.Invalid("service URL", "the table client cannot be built from it")
	}
	return svc, nil
}

// isLoopback reports whether host (without port or brackets) is localhost or a loopback IP
// literal. Names other than "localhost" are not resolved: what a name resolves to is not
// the caller's to decide here.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
