package sas_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/sas"
)

// SharedKeyFromConnectionString reads connection strings as account.NewClients does: a
// misspelled key or a malformed value is an InvalidInputError naming the key, and a string
// that names endpoints gets its TableEndpoint or none, never the public one.
func TestSharedKeyFromConnectionStringRefusesTyposAndKeepsExplicitEndpoints(t *testing.T) {
	t.Parallel()
	base := "AccountName=myaccount;AccountKey=" + testKey
	for _, c := range []struct{ cs, key string }{
		{base + ";TableEndpont=https://tables.example.com", "TableEndpont"},
		{"DefaultEndpointsProtocol=htp;" + base + ";EndpointSuffix=core.windows.net", "DefaultEndpointsProtocol"},
		{"AccountName=myaccount;AccountKey=" + testKey[:len(testKey)-3] + ";EndpointSuffix=core.windows.net", "AccountKey"},
		{base + ";BlobEndpoint=https://blobs.example.com", "TableEndpoint"},
	} {
		_, endpoint, err := sas.SharedKeyFromConnectionString(c.cs)
		var ie *repo.InvalidInputError
		if !errors.As(err, &ie) || !strings.Contains(ie.Field, c.key) {
			t.Errorf("%.50s...: endpoint %q, %v; want an InvalidInputError naming %s", c.cs, endpoint, err, c.key)
			continue
		}
		if strings.Contains(err.Error(), testKey[:20]) {
			t.Errorf("the error quotes the key: %v", err)
		}
	}
}
