package account_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// Bad input is refused before anything is built, and errors never quote a connection
// string or a URL query.
func TestBadInput(t *testing.T) {
	t.Parallel()
	const secret = "c2VjcmV0a2V5"
	if _, err := account.NewClients("AccountName=a;AccountKey="+secret+";nonsense", nil); !errors.Is(err, repo.ErrInvalidInput) || strings.Contains(err.Error(), secret) {
		t.Fatalf("bad connection string: %v", err)
	}
	if _, err := account.NewTokenClients(account.Endpoints{Table: "http://a.table.core.windows.net"}, nil, nil); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("nil credential: %v", err)
	}
	if _, err := account.PublicEndpoints("Not_An_Account", ""); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("bad account name: %v", err)
	}
	e, err := account.PublicEndpoints("myaccount", "")
	if err != nil || e.Table != "https://myaccount.table.core.windows.net" || e.Blob != "https://myaccount.blob.core.windows.net" {
		t.Fatalf("%+v, %v", e, err)
	}
}
