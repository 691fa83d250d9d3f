package tabletest_test

import (
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablepatterns/tablepatterns/tabletest"
)

// shared is this package's own Env: the Example and the plain tests use it.
var shared = tabletest.NewEnv(nil)

// oauthEnv is one OAuth server for the tests that need one.
var oauthEnv = tabletest.NewEnv(&tabletest.Options{OAuth: true})

func TestMain(m *testing.M) {
	code := shared.Run(m)
	if err := oauthEnv.Close(); err != nil && code == 0 {
		code = 1
	}
	os.Exit(code)
}

func TestOAuthServesAllThreeServicesWithTokensOnly(t *testing.T) {
	t.Parallel()
	s := oauthEnv.Server(t)
	if !s.OAuth() {
		t.Fatal("OAuth() false on an OAuth server")
	}
	for _, u := range []string{s.TableURL(), s.QueueURL(), s.BlobURL()} {
		if !strings.HasPrefix(u, "https://127.0.0.1:") {
			t.Errorf("endpoint %q is not https on loopback", u)
		}
	}
	cred := s.Credential()
	opts := s.ClientOptions()
	if opts.Retry.MaxRetries != -1 || opts.Transport == nil {
		t.Fatalf("ClientOptions: retries %d, transport %v; want -1 and one trusting the certificate", opts.Retry.MaxRetries, opts.Transport)
	}
	// Built from URLs and the credential only: no account key anywhere.
	tables, err := aztables.NewServiceClient(s.TableURL(), cred, &aztables.ClientOptions{ClientOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	queues, err := azqueue.NewServiceClient(s.QueueURL(), cred, &azqueue.ClientOptions{ClientOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := azblob.NewClient(s.BlobURL(), cred, &azblob.ClientOptions{ClientOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := tables.CreateTable(ctx, "tokentable", nil); err != nil {
		t.Fatal(err)
	}
	tc := tables.NewClient("tokentable")
	if _, err := tc.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r","V":1}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.GetEntity(ctx, "p", "r", nil); err != nil {
		t.Fatal(err)
	}
	q := queues.NewQueueClient("token-queue")
	if _, err := q.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := q.EnqueueMessage(ctx, "hello", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := blobs.CreateContainer(ctx, "token-container", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := blobs.UploadBuffer(ctx, "token-container", "b", []byte("data"), nil); err != nil {
		t.Fatal(err)
	}
	if cred.Issued() == 0 {
		t.Fatal("the credential issued no token: the clients did not use it")
	}

	// The same clients through Server.Clients.
	c, err := s.Clients()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Tables.NewClient("tokentable").GetEntity(ctx, "p", "r", nil); err != nil {
		t.Fatalf("Server.Clients table: %v", err)
	}
	if _, err := c.Queues.NewQueueClient("token-queue").PeekMessage(ctx, nil); err != nil {
		t.Fatalf("Server.Clients queue: %v", err)
	}
	if _, err := c.Blobs.DownloadStream(ctx, "token-container", "b", nil); err != nil {
		t.Fatalf("Server.Clients blob: %v", err)
	}
}

// The server really checks the tokens: an expired one and one for another audience are
// refused by all three services, so the passing test above proves token authentication.
func TestOAuthRefusesBadTokens(t *testing.T) {
	t.Parallel()
	s := oauthEnv.Server(t)
	opts := s.ClientOptions()
	for name, cred := range map[string]*tabletest.Credential{
		"expired":        {Lifetime: -time.Minute},
		"other audience": {Audience: "https://vault.azure.net"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			tables, _ := aztables.NewServiceClient(s.TableURL(), cred, &aztables.ClientOptions{ClientOptions: opts})
			queues, _ := azqueue.NewServiceClient(s.QueueURL(), cred, &azqueue.ClientOptions{ClientOptions: opts})
			blobs, _ := azblob.NewClient(s.BlobURL(), cred, &azblob.ClientOptions{ClientOptions: opts})
			_, errT := tables.CreateTable(ctx, "refused", nil)
			_, errQ := queues.NewQueueClient("refused").Create(ctx, nil)
			_, errB := blobs.CreateContainer(ctx, "refused", nil)
			for svc, err := range map[string]error{"table": errT, "queue": errQ, "blob": errB} {
				var re *azcore.ResponseError
				if !errors.As(err, &re) || (re.StatusCode != http.StatusUnauthorized && re.StatusCode != http.StatusForbidden) {
					t.Errorf("%s service accepted a bad token or failed otherwise: %v", svc, err)
				}
			}
			if cred.Issued() == 0 {
				t.Error("no token was sent")
			}
		})
	}
}

func TestNotInstalledSaysHowToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	env := tabletest.NewEnv(&tabletest.Options{Dir: t.TempDir()})
	_, err := env.Start(t.Context())
	if !errors.Is(err, tabletest.ErrNotInstalled) {
		t.Fatalf("err = %v, want ErrNotInstalled", err)
	}
	if !strings.Contains(err.Error(), "npm install --save-dev azurite") {
		t.Errorf("message %q lacks the install command", err)
	}
	// A failed start is remembered, not retried by every test.
	if _, err2 := env.Start(t.Context()); err2 != err {
		t.Errorf("second Start: %v, want the same error", err2)
	}
}

func TestConnectionStringServer(t *testing.T) {
	t.Parallel()
	s := shared.Server(t)
	c, err := s.Clients()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.ConnectionString(), "TableEndpoint="+s.TableURL()) {
		t.Error("connection string does not name the table endpoint")
	}
	if _, err := c.Tables.CreateTable(t.Context(), "plaintable", nil); err != nil {
		t.Fatal(err)
	}
}
