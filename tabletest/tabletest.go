package tabletest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablepatterns/tablepatterns/internal/azurite"
)

// ErrNotInstalled is wrapped by the error of Start (and reported by New and Env.Server)
// when neither node_modules/.bin/azurite nor azurite on PATH exists. The message says how to
// install it.
var ErrNotInstalled = azurite.ErrNotInstalled

// The well-known development account Azurite serves. Its key is public (Microsoft's
// documentation prints it); it protects nothing.
const (
	// AccountName is the account name of every Server.
	AccountName = azurite.DevAccountName
)

// Options configures a server. nil and the zero value are the defaults.
type Options struct {
	// Dir is the directory holding node_modules/.bin/azurite. Defaults to the module root
	// (the nearest directory at or above the working directory that holds go.mod); PATH is
	// searched when it has no Azurite.
	Dir string
	// OAuth serves HTTPS with a self-signed certificate and makes Azurite check bearer
	// tokens; see the package doc. Defaults to false: plain HTTP, shared key.
	OAuth bool
	// Output, if not nil, receives Azurite's output. It must be safe for concurrent use.
	Output io.Writer
}

// Server is a running Azurite. Its methods are safe for concurrent use.
type Server struct {
	s     *azurite.Server
	oauth bool
}

// Start starts an in-memory Azurite on 127.0.0.1 with free ports and returns once its Blob,
// Queue and Table services answer. The process outlives ctx; stop it with Close. Start
// gives up after ctx is done or 3 minutes.
//
// Errors: one wrapping ErrNotInstalled, with the install command, if Azurite is not found;
// one quoting Azurite's last output if it exits or does not become ready.
func Start(ctx context.Context, opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	ao := azurite.Options{Dir: o.Dir, Stdout: o.Output}
	if o.OAuth {
		ao.OAuth = "basic"
	}
	s, err := azurite.Start(ctx, ao)
	if err != nil {
		return nil, fmt.Errorf("tabletest: %w", err)
	}
	return &Server{s: s, oauth: o.OAuth}, nil
}

// New starts a server for one test (see Start) and stops it in t.Cleanup. It fails the
// test, saying how to install Azurite, if the server cannot start. A server per test costs
// about 2 seconds; Env shares one per test binary.
func New(t testing.TB, opts *Options) *Server {
	t.Helper()
	s, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("tabletest: %v", err)
		}
	})
	return s
}

// Close stops Azurite and waits for it to exit. It is safe to call more than once.
func (s *Server) Close() error { return s.s.Close() }

// ConnectionString returns the server's connection string (the development account and its
// public key, with explicit endpoints), for aztables.NewServiceClientFromConnectionString,
// account.NewClients and the like. With Options.OAuth the endpoints are https URLs whose
// certificate only ClientOptions' transport trusts.
func (s *Server) ConnectionString() string { return s.s.ConnectionString }

// TableURL returns the Table service endpoint, e.g. http://127.0.0.1:PORT/devstoreaccount1.
func (s *Server) TableURL() string { return s.s.TableURL }

// QueueURL returns the Queue service endpoint.
func (s *Server) QueueURL() string { return s.s.QueueURL }

// BlobURL returns the Blob service endpoint.
func (s *Server) BlobURL() string { return s.s.BlobURL }

// OAuth reports whether the server checks bearer tokens over HTTPS (Options.OAuth).
func (s *Server) OAuth() bool { return s.oauth }

// HTTPClient returns a new HTTP client for the server; with Options.OAuth it trusts only
// the server's self-signed certificate.
func (s *Server) HTTPClient() *http.Client { return s.s.HTTPClient() }

// ClientOptions returns Azure SDK client options for the server: the SDK's retries off
// (MaxRetries -1; tablepatterns' retry package owns retries) and, with Options.OAuth, a
// transport that trusts the server's certificate.
func (s *Server) ClientOptions() policy.ClientOptions {
	o := policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}
	if s.s.RootCAs != nil {
		o.Transport = s.s.HTTPClient()
	}
	return o
}

// Clients are raw Azure SDK clients of a Server.
type Clients struct {
	// Tables is the Table service client.
	Tables *aztables.ServiceClient
	// Queues is the Queue service client.
	Queues *azqueue.ServiceClient
	// Blobs is the Blob service client.
	Blobs *azblob.Client
}

// Clients returns Azure SDK clients for the server, with ClientOptions. With Options.OAuth
// they authenticate with Credential's bearer tokens and are never given the account key;
// otherwise with the connection string's shared key.
//
// Errors: those of the Azure SDK constructors (none are expected).
func (s *Server) Clients() (*Clients, error) {
	base := s.ClientOptions()
	var c Clients
	var err error
	if s.oauth {
		cred := s.Credential()
		if c.Tables, err = aztables.NewServiceClient(s.TableURL(), cred, &aztables.ClientOptions{ClientOptions: base}); err != nil {
			return nil, fmt.Errorf("tabletest: table client: %w", err)
		}
		if c.Queues, err = azqueue.NewServiceClient(s.QueueURL(), cred, &azqueue.ClientOptions{ClientOptions: base}); err != nil {
			return nil, fmt.Errorf("tabletest: queue client: %w", err)
		}
		if c.Blobs, err = azblob.NewClient(s.BlobURL(), cred, &azblob.ClientOptions{ClientOptions: base}); err != nil {
			return nil, fmt.Errorf("tabletest: blob client: %w", err)
		}
		return &c, nil
	}
	cs := s.ConnectionString()
	if c.Tables, err = aztables.NewServiceClientFromConnectionString(cs, &aztables.ClientOptions{ClientOptions: base}); err != nil {
		return nil, fmt.Errorf("tabletest: table client: %w", err)
	}
	if c.Queues, err = azqueue.NewServiceClientFromConnectionString(cs, &azqueue.ClientOptions{ClientOptions: base}); err != nil {
		return nil, fmt.Errorf("tabletest: queue client: %w", err)
	}
	if c.Blobs, err = azblob.NewClientFromConnectionString(cs, &azblob.ClientOptions{ClientOptions: base}); err != nil {
		return nil, fmt.Errorf("tabletest: blob client: %w", err)
	}
	return &c, nil
}

// Env is one server per test binary, started by the first test that asks for it (so that
// tests which need no storage run without Azurite) and stopped by Run or Close. Its methods
// are safe for concurrent use.
type Env struct {
	lazy *azurite.Lazy[*Server]
}

// NewEnv returns an Env that starts its server with opts (nil: defaults) on first use.
// It does nothing else.
func NewEnv(opts *Options) *Env {
	var o Options
	if opts != nil {
		o = *opts
	}
	return &Env{lazy: azurite.NewLazy(func(ctx context.Context) (*Server, error) { return Start(ctx, &o) })}
}

// Start returns the Env's server, starting it on the first call. A failed start is not
// retried (every later call returns the same error), except one that failed because ctx
// ended: that was the caller's, not the server's. For Example functions and TestMain;
// tests use Server.
//
// Errors: as the package-level Start, or one saying the Env is closed.
func (e *Env) Start(ctx context.Context) (*Server, error) {
	s, err := e.lazy.Start(ctx)
	if errors.Is(err, azurite.ErrClosed) {
		return nil, errors.New("tabletest: the Env is closed")
	}
	return s, err
}

// Server returns the Env's server, starting it on the first call. It fails the test, with
// the install command if Azurite is missing, when the server cannot start.
func (e *Env) Server(t testing.TB) *Server {
	t.Helper()
	s, err := e.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Started reports whether a server is running (a test asked for it and it started).
func (e *Env) Started() bool { return e.lazy.Started() }

// Close stops the server if one was started. Later calls of Start fail.
func (e *Env) Close() error { return e.lazy.Close() }

// Run runs the tests and then Close, and returns the exit code for os.Exit:
//
//	func TestMain(m *testing.M) { os.Exit(env.Run(m)) }
//
// A failure to stop the server is printed and turns a passing run into exit code 1.
func (e *Env) Run(m *testing.M) int {
	code := m.Run()
	if err := e.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "tabletest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// compile-time check: the credential is an azcore.TokenCredential.
var _ azcore.TokenCredential = (*Credential)(nil)
