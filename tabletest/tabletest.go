package tabletest

import (
	"context"
	"testing"

	it "github.com/tablepatterns/tablepatterns/internal/tabletest"
)

// The implementation lives in internal/tabletest, where the project's own test harness
// uses it too: every test of this module runs on it. The names below are the public API.

// ErrNotInstalled is wrapped by the error of Start (and reported by New and Env.Server)
// when neither node_modules/.bin/azurite nor azurite on PATH exists. The message says how to
// install it.
var ErrNotInstalled = it.ErrNotInstalled

// AccountName is the account name of every Server: Azurite's well-known development account,
// whose key is public and protects nothing.
const AccountName = it.AccountName

// TestTenantID is the tenant of the tokens Credential signs.
const TestTenantID = it.TestTenantID

type (
	// Options configures a Server; nil means the defaults (see the fields).
	Options = it.Options
	// Server is one running in-memory Azurite on loopback ports.
	Server = it.Server
	// Clients are raw Azure SDK clients on a Server, with the SDK's own retries off.
	Clients = it.Clients
	// Env is one Azurite per test binary, started on first use and stopped by Run.
	Env = it.Env
	// Credential is an azcore.TokenCredential whose tokens Azurite's basic OAuth accepts
	// (see Options.OAuth); it signs nothing a real service would accept.
	Credential = it.Credential
)

// Start starts an in-memory Azurite on free loopback ports. Close it when done.
//
// Errors: ErrNotInstalled (with how to install Azurite), or why it did not start.
func Start(ctx context.Context, opts *Options) (*Server, error) { return it.Start(ctx, opts) }

// New starts a private Azurite for test t and stops it when t ends; it fails t (saying
// how to install Azurite) if it cannot start.
func New(t testing.TB, opts *Options) *Server { return it.New(t, opts) }

// NewEnv returns an Env that starts one Azurite with opts on first use.
func NewEnv(opts *Options) *Env { return it.NewEnv(opts) }
