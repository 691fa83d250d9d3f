package repo

import (
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
// Errors: ErrInvalidInput for a URL that is not http(s) with a host, an empty token, or a
// token that is not a query string.
func NewTablesWithSAS(serviceURL, token string, opts *ClientOptions) (*aztables.ServiceClient, error) {
	u, err := url.Parse(serviceURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" {
		return nil, errs.Invalid("service URL", "must be an http(s) table service endpoint without a query")
	}
	token = strings.TrimPrefix(token, "?")
	if token == "" {
		return nil, errs.Invalid("SAS token", "is empty")
	}
	if q, err := url.ParseQuery(token); err != nil || q.Get("sig") == "" {
		return nil, errs.Invalid("SAS token", "is not a SAS query string (it needs a sig parameter)")
	}
	if opts == nil {
		opts = &ClientOptions{}
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
