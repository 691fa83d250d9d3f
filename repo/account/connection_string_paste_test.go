package account_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// A connection string read from a file a Windows editor saved begins with a byte order
// mark: it is the same string, not an unknown key.
func TestConnectionStringWithLeadingByteOrderMarkIsAccepted(t *testing.T) {
	t.Parallel()
	cl, err := account.NewClients("\ufeffDefaultEndpointsProtocol=https;AccountName=myaccount;AccountKey="+goodKey+";EndpointSuffix=core.windows.net", nil)
	if err != nil || cl.Tables == nil {
		t.Fatalf("%v", err)
	}
}

// An endpoint whose port is out of range, or whose URL holds a space or a control
// character (a paste that ran into the next line or key), is refused with an error that
// names the key, before any client is built.
func TestConnectionStringRefusesEndpointWithBadPortOrSpace(t *testing.T) {
	t.Parallel()
	base := "AccountName=myaccount;AccountKey=" + goodKey
	for _, ep := range []string{
		"https://myaccount.table.core.windows.net:99999/",
		"https://myaccount.table.core.windows.net:0/",
		"https://myaccount.table.core.windows.net/a b",
		"https://myaccount.table.core.windows.net/\tx",
	} {
		_, err := account.NewClients(base+";TableEndpoint="+ep, nil)
		var ie *repo.InvalidInputError
		if !errors.As(err, &ie) || !strings.Contains(ie.Field, "TableEndpoint") {
			t.Errorf("%q: %v, want an InvalidInputError naming TableEndpoint", ep, err)
		}
	}
}

// A secondary endpoint goes with its primary (as in the Azure SDKs' parsers): a string
// that names one without the other is refused, naming the secondary, rather than served
// at the account's public primary endpoints it never named.
func TestConnectionStringSecondaryEndpointWithoutItsPrimaryIsRefused(t *testing.T) {
	t.Parallel()
	base := "AccountName=myaccount;AccountKey=" + goodKey
	for _, k := range []string{"TableSecondaryEndpoint", "QueueSecondaryEndpoint", "BlobSecondaryEndpoint", "FileSecondaryEndpoint"} {
		cl, err := account.NewClients(base+";"+k+"=https://private.example.com/myaccount", nil)
		var ie *repo.InvalidInputError
		if !errors.As(err, &ie) || !strings.Contains(ie.Field, k) {
			t.Errorf("%s alone: %v (clients %v), want an InvalidInputError naming %s", k, err, cl, k)
		}
	}
	if _, err := account.NewClients(base+";TableEndpoint=https://private.example.com/t;TableSecondaryEndpoint=https://private2.example.com/t", nil); err != nil {
		t.Errorf("with its primary: %v", err)
	}
}
