package tabletest

import (
	"context"
	"io"
	"strings"
	"testing"
)

// Main's program runs on an embedded Azurite, which is stopped after it.
func TestProgramRunsOnEmbeddedAzurite(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	var got string
	err := runProgram(t.Context(), &out, false, func(string) string { return "" }, func(_ context.Context, _ io.Writer, cs string) error {
		got = cs
		return nil
	})
	if err != nil || !strings.Contains(got, "TableEndpoint=http://127.0.0.1:") || !strings.Contains(out.String(), "in-memory Azurite") {
		t.Fatalf("runProgram: %v, connection string for %q, output %q", err, strings.SplitN(got, "AccountKey", 2)[0], out.String())
	}
}

// -use-env without the variable fails before the program runs.
func TestProgramUseEnvWithoutVariable(t *testing.T) {
	t.Parallel()
	called := false
	err := runProgram(t.Context(), io.Discard, true, func(string) string { return "" }, func(context.Context, io.Writer, string) error { called = true; return nil })
	if err == nil || called {
		t.Fatalf("-use-env without the variable: %v (run called: %v)", err, called)
	}
}
