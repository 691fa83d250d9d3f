package testenv

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/azurite"
)

// EnvConnectionString names the variable that points the tests at another account instead
// of a fresh Azurite. It holds an account key: it is never printed.
const EnvConnectionString = "TABLEPATTERNS_TEST_CONNECTION_STRING"

// env is the Azurite of this test binary, started on first use so that pure tests run
// without Azurite.
var env = azurite.NewLazy(func(ctx context.Context) (*azurite.Server, error) {
	return azurite.Start(ctx, azurite.Options{})
})

// oauthEnv is a second Azurite, started on first use by OAuthServer: HTTPS and bearer
// tokens checked.
var oauthEnv = azurite.NewLazy(func(ctx context.Context) (*azurite.Server, error) {
	return azurite.Start(ctx, azurite.Options{OAuth: "basic"})
})

var (
	// mainCalled is set by Main before m.Run: Server refuses to start a server nobody stops.
	mainCalled bool
	// fromEnv is the account of TABLEPATTERNS_TEST_CONNECTION_STRING, set by Main before
	// m.Run and read-only after; nil when the tests use Azurite.
	fromEnv *azurite.Server

	lazyOnce sync.Once
	lazy     *azurite.Server
	lazyErr  error
)

// Main runs the tests of a package against one storage account and exits with their status.
// Use it as
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// If TABLEPATTERNS_TEST_CONNECTION_STRING is set it uses that account; otherwise the first
// test that needs storage starts an in-memory Azurite on loopback, and Main stops it after
// m.Run. Tests that need no storage run without Azurite installed. If
// Azurite cannot be started, every test that needs it fails with a message saying how to
// install it: tests are never skipped for want of a server.
func Main(m *testing.M) {
	os.Exit(run(m, true))
}

// MainAzurite is Main for the tests of tools that emulate Azurite's own behaviour (the
// fault proxy forges Azurite's continuation tokens): it always uses an in-memory Azurite
// and ignores TABLEPATTERNS_TEST_CONNECTION_STRING, so that those tests run, and can fail,
// whatever account the other packages are pointed at.
func MainAzurite(m *testing.M) {
	os.Exit(run(m, false))
}

func run(m *testing.M, allowEnv bool) int {
	mainCalled = true
	if cs := os.Getenv(EnvConnectionString); cs != "" && allowEnv {
		s, err := azurite.ParseConnectionString(cs)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testenv: %s: %v\n", EnvConnectionString, err)
			return 1
		}
		// Never the connection string itself: it holds the account key.
		fmt.Fprintf(os.Stderr, "testenv: using account %q from %s (table %s, queue %s, blob %s)\n",
			s.AccountName, EnvConnectionString, host(s.TableURL), host(s.QueueURL), host(s.BlobURL))
		fromEnv = s
	}
	return stopServers(m.Run())
}

// stopServers stops the Azurites that tests started; a failure to stop fails the run.
func stopServers(code int) int {
	for _, l := range []*azurite.Lazy[*azurite.Server]{env, oauthEnv} {
		if err := l.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// OAuthServer returns an Azurite of this test binary that serves HTTPS and checks bearer
// tokens (Azurite's basic OAuth level), starting it on first use; Main stops it. It is
// always a local Azurite, whatever TABLEPATTERNS_TEST_CONNECTION_STRING says. Build
// clients with a token credential (tabletest.Credential issues tokens it accepts) and
// s.HTTPClient(), which trusts its certificate; never with its connection string, to
// prove that code works without the account key. It fails the test, saying how to install
// Azurite, if the server cannot start.
func OAuthServer(t testing.TB) *azurite.Server {
	t.Helper()
	if !mainCalled {
		t.Fatal("testenv: no storage server: the package's TestMain must call testenv.Main")
	}
	s, err := oauthEnv.Start(context.Background())
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return s
}

// OAuthEnv returns the lazily started server behind OAuthServer, for code that has no
// testing.TB (a transport built before the tests run). Main closes it.
func OAuthEnv() *azurite.Lazy[*azurite.Server] { return oauthEnv }

// started returns the Azurite of this test binary, starting it on first use. The
// azurite.Server view of it carries the endpoints and the development key; closing it does
// nothing (Main stops the process).
func started() (*azurite.Server, error) {
	lazyOnce.Do(func() {
		var s *azurite.Server
		if s, lazyErr = env.Start(context.Background()); lazyErr == nil {
			lazy, lazyErr = azurite.ParseConnectionString(s.ConnectionString)
		}
	})
	return lazy, lazyErr
}

// host returns the host of an endpoint for logging, or "-" when there is none.
func host(endpoint string) string {
	if endpoint == "" {
		return "-"
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "(unparsable endpoint)"
	}
	return u.Host
}

// Server returns the account of this test binary, starting Azurite on first use. It fails
// the test if the package's TestMain did not call Main, or (saying how to install it) if
// Azurite cannot start.
func Server(t testing.TB) *azurite.Server {
	t.Helper()
	if !mainCalled {
		t.Fatal("testenv: no storage server: the package's TestMain must call testenv.Main (run `make test`, which installs Azurite)")
	}
	if fromEnv != nil {
		return fromEnv
	}
	s, err := started()
	if err != nil {
		t.Fatalf("testenv: %v (or set %s to use another account)", err, EnvConnectionString)
	}
	return s
}

// ConnectionString returns the connection string of the account of this test binary. It
// holds the account key: do not log it.
func ConnectionString(t testing.TB) string {
	t.Helper()
	return Server(t).ConnectionString
}

// cleanupContext bounds the I/O done in t.Cleanup, where t.Context is already cancelled.
func cleanupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// ExampleConnectionString returns the connection string of the account of this test
// binary for Example functions, which have no testing.TB, starting Azurite on first use. It
// panics if TestMain did not call Main or Azurite cannot start: an example run without a
// server must fail loudly, not pass.
func ExampleConnectionString() string {
	if !mainCalled {
		panic("testenv: no storage server: the package's TestMain must call testenv.Main (run `make test`, which installs Azurite)")
	}
	if fromEnv != nil {
		return fromEnv.ConnectionString
	}
	s, err := started()
	if err != nil {
		panic(fmt.Sprintf("testenv: %v", err))
	}
	return s.ConnectionString
}
