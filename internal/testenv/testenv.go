package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/azurite"
)

// EnvConnectionString names the variable that points the tests at another account instead
// of a fresh Azurite. It holds an account key: it is never printed.
const EnvConnectionString = "TABLEPATTERNS_TEST_CONNECTION_STRING"

// shared is the server of this test binary, set by Main before m.Run and read-only after.
var shared *azurite.Server

// Main runs the tests of a package against one storage account and exits with their status.
// Use it as
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// If TABLEPATTERNS_TEST_CONNECTION_STRING is set it uses that account; otherwise it starts an
// in-memory Azurite on loopback and stops it after m.Run. If the account cannot be used it
// prints why (saying to run `make test`) and exits 1: tests are never skipped for want of a
// server.
func Main(m *testing.M) {
	os.Exit(run(m, true))
}

// MainAzurite is Main for the tests of tools that emulate Azurite's own behaviour (the
// fault proxy forges Azurite's continuation tokens): it always starts an in-memory Azurite
// and ignores TABLEPATTERNS_TEST_CONNECTION_STRING, so that those tests run, and can fail,
// whatever account the other packages are pointed at.
func MainAzurite(m *testing.M) {
	os.Exit(run(m, false))
}

func run(m *testing.M, allowEnv bool) int {
	if cs := os.Getenv(EnvConnectionString); cs != "" && allowEnv {
		s, err := azurite.ParseConnectionString(cs)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testenv: %s: %v\n", EnvConnectionString, err)
			return 1
		}
		// Never the connection string itself: it holds the account key.
		fmt.Fprintf(os.Stderr, "testenv: using account %q from %s (table %s, queue %s, blob %s)\n",
			s.AccountName, EnvConnectionString, host(s.TableURL), host(s.QueueURL), host(s.BlobURL))
		shared = s
		return m.Run()
	}
	s, err := azurite.Start(context.Background(), azurite.Options{})
	if err != nil {
		if errors.Is(err, azurite.ErrNotInstalled) {
			fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		} else {
			fmt.Fprintf(os.Stderr, "testenv: cannot start Azurite (run `make test`, which installs it with npm ci; set %s to use another account): %v\n", EnvConnectionString, err)
		}
		return 1
	}
	shared = s
	code := m.Run()
	if err := s.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
	}
	return code
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

// Server returns the account of this test binary. It fails the test, saying to run
// `make test`, if the package's TestMain did not call Main.
func Server(t testing.TB) *azurite.Server {
	t.Helper()
	if shared == nil {
		t.Fatal("testenv: no storage server: the package's TestMain must call testenv.Main (run `make test`, which installs Azurite)")
	}
	return shared
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
// binary for Example functions, which have no testing.TB. It panics if TestMain did not
// call Main: an example run without a server must fail loudly, not pass.
func ExampleConnectionString() string {
	if shared == nil {
		panic("testenv: no storage server: the package's TestMain must call testenv.Main (run `make test`, which installs Azurite)")
	}
	return shared.ConnectionString
}
