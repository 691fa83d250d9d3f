package account_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

type fakeCred struct{}

func (fakeCred) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "t"}, nil
}

const sig = "SIGSECRETabcdef0123"

func noSecret(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("%s: %v, want ErrInvalidInput", what, err)
		return
	}
	if strings.Contains(err.Error(), sig) || strings.Contains(err.Error(), "sig=") {
		t.Errorf("%s: error quotes the secret: %v", what, err)
	}
}

// Malformed connection strings, endpoints and suffixes that carry an account key or a SAS
// signature are refused with ErrInvalidInput, and the error never quotes the secret.
func TestClientErrorsNeverQuoteTheAccountSecret(t *testing.T) {
	for _, cs := range []string{
		"", ";", "AccountName=a;AccountKey=" + sig,
		"DefaultEndpointsProtocol=https;AccountName=a;AccountKey=" + sig + ";EndpointSuffix=core.windows.net;TableEndpoint=%%%",
		"TableEndpoint=https://a.table.core.windows.net;SharedAccessSignature=sv=2020&sig=" + sig,
		"BlobEndpoint=::bad;SharedAccessSignature=sig=" + sig,
		"AccountName=a;AccountKey=not base64 " + sig,
	} {
		_, err := account.NewClients(cs, nil)
		if err == nil {
			continue
		}
		noSecret(t, "NewClients("+cs[:min(len(cs), 20)]+"...)", err)
	}
	for _, u := range []string{
		"http://a.table.core.windows.net", "HTTP://a.table.core.windows.net",
		"https://a.table.core.windows.net?sv=1&sig=" + sig,
		"https://u:" + sig + "@a.table.core.windows.net",
		"https://a.table.core.windows.net/%zz?sig=" + sig,
		"//a.table.core.windows.net", "https:///path?sig=" + sig,
		"ftp://a?sig=" + sig, " https://a.table.core.windows.net",
	} {
		_, err := account.NewTokenClients(account.Endpoints{Table: u}, fakeCred{}, nil)
		noSecret(t, "NewTokenClients "+u, err)
		_, err = account.NewTokenClients(account.Endpoints{Queue: u}, fakeCred{}, nil)
		noSecret(t, "NewTokenClients queue "+u, err)
	}
	// A host pasted with its SAS as the endpoint suffix.
	_, err := account.PublicEndpoints("myaccount", "core.windows.net?sig="+sig)
	noSecret(t, "PublicEndpoints suffix with a query", err)
	for _, s := range []string{"core.windows.net/", "evil.com#", "a..b", ".core.windows.net", "core windows net", "x\x00y"} {
		e, err := account.PublicEndpoints("myaccount", s)
		if err == nil {
			t.Errorf("suffix %q accepted: %+v", s, e)
		}
	}
	// https only for tokens: an accepted endpoint is https.
	c, err := account.NewTokenClients(account.Endpoints{Table: "HTTPS://a.table.core.windows.net"}, fakeCred{}, nil)
	if err != nil || c.Tables == nil {
		t.Errorf("upper-case HTTPS: %v", err)
	}
}
