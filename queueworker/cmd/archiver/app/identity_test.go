package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

// The real credential of -auth default, azidentity's DefaultAzureCredential, signs in as
// an App Service managed identity (IDENTITY_ENDPOINT and IDENTITY_HEADER, served here by a
// test endpoint that issues tokens Azurite accepts) and its tokens reach Azurite over
// HTTPS. Not parallel: it sets process environment variables.
func TestDefaultAzureCredentialWithManagedIdentity(t *testing.T) {
	issuer := &tabletest.Credential{}
	var (
		mu    sync.Mutex
		asked []string
	)
	mi := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-IDENTITY-HEADER") != "test-secret" {
			http.Error(w, "no identity header", http.StatusUnauthorized)
			return
		}
		resource := r.URL.Query().Get("resource")
		mu.Lock()
		asked = append(asked, resource)
		mu.Unlock()
		tok, err := issuer.GetToken(r.Context(), policy.TokenRequestOptions{Scopes: []string{resource + "/.default"}})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{
			"access_token": tok.Token, "expires_on": strconv.FormatInt(tok.ExpiresOn.Unix(), 10),
			"resource": resource, "token_type": "Bearer",
		})
	}))
	t.Cleanup(mi.Close)
	t.Setenv("AZURE_TOKEN_CREDENTIALS", "ManagedIdentityCredential")
	t.Setenv("IDENTITY_ENDPOINT", mi.URL+"/token")
	t.Setenv("IDENTITY_HEADER", "test-secret")
	for _, v := range []string{"AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE", "MSI_ENDPOINT", "IMDS_ENDPOINT"} {
		if old, ok := os.LookupEnv(v); ok { // unset, not empty: an empty client id is an error
			_ = os.Unsetenv(v)
			t.Cleanup(func() { _ = os.Setenv(v, old) })
		}
	}

	cred, err := app.DefaultCredential()
	if err != nil {
		t.Fatal(err)
	}
	s := testenv.OAuthServer(t)
	clients, err := account.NewTokenClients(account.Endpoints{Table: s.TableURL}, cred, &repo.ClientOptions{Transport: s.HTTPClient()})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := repo.New[struct {
		PartitionKey, RowKey string
	}](clients.Tables, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.CreateIfNotExists(t.Context()); err != nil {
		t.Fatalf("DefaultAzureCredential's token refused: %v", err)
	}
	t.Cleanup(func() { _ = tb.DeleteTable(context.Background()) })
	mu.Lock()
	defer mu.Unlock()
	if len(asked) == 0 || asked[0] != "https://storage.azure.com" {
		t.Fatalf("the managed identity endpoint was asked for %q, want https://storage.azure.com", asked)
	}
}
