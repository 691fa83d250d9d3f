package app_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/azurite"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/patterns/tablearchive"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

// tokenCred is the credential of -auth default in these tests: it signs tokens the OAuth
// Azurite accepts, and counts them.
var tokenCred = &tabletest.Credential{}

// oauthTransport sends https requests with a client that trusts the OAuth Azurite's
// certificate (started on first use) and http requests as usual.
type oauthTransport struct{}

var (
	oauthOnce   sync.Once
	oauthClient *http.Client
	oauthErr    error
)

func (oauthTransport) Do(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" {
		return http.DefaultClient.Do(req)
	}
	oauthOnce.Do(func() {
		var s *azurite.Server
		if s, oauthErr = testenv.OAuthEnv().Start(context.Background()); oauthErr == nil {
			oauthClient = s.HTTPClient()
		}
	})
	if oauthErr != nil {
		return nil, oauthErr
	}
	return oauthClient.Do(req)
}

// archiverToken runs the archiver with -auth default against the OAuth Azurite, with an
// environment that holds no connection string and no key.
func archiverToken(t *testing.T, s *azurite.Server, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut strings.Builder
	ctx := t.Context() // a run that never ends hangs until go test -timeout
	args = append(args, "-auth", "default",
		"-table-endpoint", s.TableURL, "-queue-endpoint", s.QueueURL, "-blob-endpoint", s.BlobURL)
	code := app.Main(ctx, args, &out, &errOut, func(string) string { return "" })
	return code, out.String(), errOut.String()
}

// The eventually consistent archive pattern and the archiver, end to end, with bearer
// tokens over HTTPS and no account key anywhere in their configuration.
func TestArchiverAndPatternWithTokenAuth(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := testenv.OAuthServer(t)
	cred := &tabletest.Credential{}
	clients, err := account.NewTokenClients(account.Endpoints{Table: s.TableURL, Queue: s.QueueURL, Blob: s.BlobURL},
		cred, &repo.ClientOptions{Transport: s.HTTPClient()})
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.TableName(t)
	current, _ := repo.New[codec.Entity](clients.Tables, name+"Cur", nil)
	archive, _ := repo.New[codec.Entity](clients.Tables, name+"Arc", nil)
	day, _ := repo.New[codec.Entity](clients.Tables, name+"Day", nil)
	for _, tb := range []*repo.Table[codec.Entity]{current, archive, day} {
		if err := tb.CreateIfNotExists(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tb.DeleteTable(context.Background()) })
	}
	for i := range 4 {
		if err := current.Insert(ctx, &codec.Entity{PartitionKey: "Sales", RowKey: fmt.Sprintf("%06d", i), Properties: map[string]any{"Age": int32(30 + i)}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		if err := day.Insert(ctx, &codec.Entity{PartitionKey: "u", RowKey: fmt.Sprintf("%04d", i)}); err != nil {
			t.Fatal(err)
		}
	}

	// The pattern itself, on token clients: enqueue and work one archive job in process.
	queue := testenv.QueueName(t)
	arch, err := consistency.New(clients, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := clients.Queues.NewQueueClient(queue)
	if _, err := q.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = q.Delete(context.Background(), nil) })
	qc, err := queueworker.NewClient(q, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := consistency.EnqueueArchiveEntity(ctx, qc, consistency.ArchiveEntityJob{Source: current.Name(), PartitionKey: "Sales", RowKey: "000000", TargetTable: archive.Name()}); err != nil {
		t.Fatal(err)
	}
	reg := queueworker.NewRegistry()
	if err := arch.Register(reg); err != nil {
		t.Fatal(err)
	}
	w, err := queueworker.New(queueworker.Config{Queue: q, Service: clients.Queues, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := archive.Get(ctx, "Sales", "000000"); err != nil {
		t.Fatalf("the pattern did not archive with a token: %v", err)
	}

	// The archiver, signing in with -auth default.
	container := testenv.ContainerName(t)
	steps := [][]string{
		{"enqueue", "archive-entity", "-queue", queue, "-source", current.Name(), "-pk", "Sales", "-rk", "000001", "-target-table", archive.Name()},
		{"enqueue", "archive-entity", "-queue", queue, "-source", current.Name(), "-pk", "Sales", "-rk", "000002", "-target-container", container},
		{"enqueue", "archive-table", "-queue", queue, "-table", day.Name(), "-container", container, "-sealed"},
	}
	before := tokenCred.Issued()
	for _, st := range steps {
		if code, _, stderr := archiverToken(t, s, st...); code != 0 {
			t.Fatalf("%q: exit %d\n%s", st, code, stderr)
		}
	}
	code, out, stderr := archiverToken(t, s, "run", "-drain", "-allow-any", "-queue", queue)
	if code != 0 || !strings.Contains(out, "processed 3, failed 0, poisoned 0") {
		t.Fatalf("run -drain: exit %d\n%s\n%s", code, out, stderr)
	}
	if tokenCred.Issued() <= before {
		t.Fatal("the archiver issued no token: it did not sign in with -auth default")
	}
	if _, err := archive.Get(ctx, "Sales", "000001"); err != nil {
		t.Fatalf("archive-entity to a table: %v", err)
	}
	left, err := current.Collect(ctx, repo.Query{})
	if err != nil || len(left) != 1 || left[0].RowKey != "000003" {
		t.Fatalf("current holds %v (%v)", left, err)
	}
	tables, err := tablearchive.New(clients, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := tables.ReadManifest(ctx, container, day.Name())
	if err != nil || m.Entities != 50 {
		t.Fatalf("manifest of the archived table: %+v %v", m, err)
	}
	if ok, _ := day.Exists(ctx); ok {
		t.Fatal("the archived table still exists")
	}
}

func TestAuthFlagErrorsExitTwo(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"poison", "list", "-auth", "password"},
		{"poison", "list", "-auth", "default"}, // no account, no endpoints
		{"poison", "list", "-auth", "default", "-account", "Bad_Name"},
		{"poison", "list", "-auth", "default", "-account", "acct", "-table-endpoint", "https://a.table.core.windows.net"},
		{"poison", "list", "-auth", "default", "-table-endpoint", "https://a.table.core.windows.net"},
		{"poison", "list", "-auth", "default", "-table-endpoint", "http://a", "-queue-endpoint", "http://b", "-blob-endpoint", "http://c"},
		{"poison", "list", "-account", "acct"}, // needs -auth default
	} {
		var out, errOut strings.Builder
		code := app.Main(t.Context(), args, &out, &errOut, func(string) string { return "" })
		if code != app.ExitUsage || !strings.Contains(errOut.String(), "archiver:") {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 with a message", args, code, errOut.String())
		}
	}
	var out strings.Builder
	app.Main(t.Context(), []string{"help"}, &out, &out, func(string) string { return "" })
	if !strings.Contains(out.String(), "-auth MODE") {
		t.Error("help does not document -auth")
	}
}
