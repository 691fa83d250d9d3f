package exampleenv

import (
	"context"
	"io"
	"strings"
	"testing"
)

func TestStartOnEmbeddedAzurite(t *testing.T) {
	var out strings.Builder
	var got string
	err := Start(t.Context(), &out, false, func(_ context.Context, _ io.Writer, connStr string) error {
		got = connStr
		return nil
	})
	if err != nil || !strings.Contains(got, "TableEndpoint=http://127.0.0.1:") || !strings.Contains(out.String(), "in-memory Azurite") {
		t.Fatalf("Start: %v, connection string for %q, output %q", err, strings.SplitN(got, "AccountKey", 2)[0], out.String())
	}
}

func TestUseEnvWithoutVariable(t *testing.T) {
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
	called := false
	err := Start(t.Context(), io.Discard, true, func(context.Context, io.Writer, string) error { called = true; return nil })
	if err == nil || called {
		t.Fatalf("-use-env without the variable: %v (run called: %v)", err, called)
	}
}
