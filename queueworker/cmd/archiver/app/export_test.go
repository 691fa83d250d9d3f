package app

import (
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// SetAuthHooks replaces the credential of -auth default and the Azure SDK client options of
// every command. Call it only from TestMain, before the tests run.
func SetAuthHooks(cred func() (azcore.TokenCredential, error), opts policy.ClientOptions) {
	seam = seams{defaultCredential: cred, azureOptions: opts}
}

// DefaultCredential is the real credential of -auth default (SetAuthHooks replaces the
// one the commands use).
var DefaultCredential = defaultCredential

// Usage is the stock archiver's help text.
func Usage() string { return usage + authUsage + telemetryUsage + (*Extensions)(nil).usage() }
