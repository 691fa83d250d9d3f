package app

import (
	"flag"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/internal/azurite"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// authUsage documents the authentication flags every command takes.
const authUsage = `
Authentication (every command):
  -auth MODE                  connection-string (default) or default: a Microsoft Entra ID
                              token from azidentity.DefaultAzureCredential (environment,
                              workload identity, managed identity, Azure CLI, ...); the
                              identity needs the Storage Table, Queue and Blob Data
                              Contributor roles; no account key is used
  -account NAME               with -auth default: the storage account (endpoints
                              https://NAME.table.SUFFIX, ...)
  -endpoint-suffix SUFFIX     with -account: the cloud's suffix (default core.windows.net)
  -table-endpoint URL, -queue-endpoint URL, -blob-endpoint URL
                              with -auth default: explicit https endpoints instead of -account
`

// Authentication modes of -auth.
const (
	authConnectionString = "connection-string"
	authDefault          = "default"
)

// defaultCredential is the credential of -auth default: azidentity's chain of
// environment, workload identity, managed identity and developer tool credentials
// (AZURE_TOKEN_CREDENTIALS narrows it).
func defaultCredential() (azcore.TokenCredential, error) {
	return azidentity.NewDefaultAzureCredential(nil)
}

// seams is what tests replace (through SetAuthHooks, from TestMain only): the one place
// the package lets a test reach in.
type seams struct {
	// defaultCredential builds the credential of -auth default; tests use the emulator's.
	defaultCredential func() (azcore.TokenCredential, error)
	// azureOptions are the Azure SDK client options of every client; tests set a
	// transport that trusts their emulator's certificate.
	azureOptions policy.ClientOptions
}

var seam = seams{defaultCredential: defaultCredential}

// authFlags are the flags that choose how the archiver signs in.
type authFlags struct {
	mode, account, suffix, table, queue, blob string
}

func (a *authFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.mode, "auth", authConnectionString, "")
	fs.StringVar(&a.account, "account", "", "")
	fs.StringVar(&a.suffix, "endpoint-suffix", "", "")
	fs.StringVar(&a.table, "table-endpoint", "", "")
	fs.StringVar(&a.queue, "queue-endpoint", "", "")
	fs.StringVar(&a.blob, "blob-endpoint", "", "")
}

// clients builds the storage clients the flags describe: from the connection string in
// the variable connEnv, or from endpoints and DefaultAzureCredential.
func (a *authFlags) clients(connEnv string, getenv func(string) string, logger *zap.Logger) (*account.Clients, error) {
	explicit := a.table != "" || a.queue != "" || a.blob != ""
	switch a.mode {
	case authConnectionString:
		if a.account != "" || a.suffix != "" || explicit {
			return nil, usagef("-account, -endpoint-suffix and -*-endpoint need -auth default (a connection string names its endpoints)")
		}
		connStr := getenv(connEnv)
		if connStr == "" {
			logger.Warn("no connection string: using the local emulator (Azurite) on 127.0.0.1:10000-10002",
				zap.String("unsetVariable", connEnv))
			// The local Azurite on its default ports: the development default, never a
			// production account by accident.
			connStr = "DefaultEndpointsProtocol=http;AccountName=" + azurite.DevAccountName + ";AccountKey=" + azurite.DevAccountKey +
				";BlobEndpoint=http://127.0.0.1:10000/" + azurite.DevAccountName +
				";QueueEndpoint=http://127.0.0.1:10001/" + azurite.DevAccountName +
				";TableEndpoint=http://127.0.0.1:10002/" + azurite.DevAccountName + ";"
		}
		// Errors never quote the connection string: it holds the account key.
		return account.NewClients(connStr, &repo.ClientOptions{Azure: traced(seam.azureOptions)})
	case authDefault:
	default:
		return nil, usagef("-auth %q: want connection-string or default", a.mode)
	}
	var endpoints account.Endpoints
	switch {
	case a.account != "" && explicit:
		return nil, usagef("-auth default: give -account or the -*-endpoint flags, not both")
	case a.account != "":
		e, err := account.PublicEndpoints(a.account, a.suffix)
		if err != nil {
			return nil, err
		}
		endpoints = e
	case explicit:
		if a.suffix != "" {
			return nil, usagef("-endpoint-suffix goes with -account")
		}
		if a.table == "" || a.queue == "" || a.blob == "" {
			return nil, usagef("-auth default: the archiver needs -table-endpoint, -queue-endpoint and -blob-endpoint (or -account)")
		}
		endpoints = account.Endpoints{Table: a.table, Queue: a.queue, Blob: a.blob}
	default:
		return nil, usagef("-auth default needs -account NAME or the three -*-endpoint flags")
	}
	cred, err := seam.defaultCredential()
	if err != nil {
		return nil, fmt.Errorf("-auth default: %w", err)
	}
	return account.NewTokenClients(endpoints, cred, &repo.ClientOptions{Azure: traced(seam.azureOptions)})
}
