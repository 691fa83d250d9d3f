package errs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
)

// The class of an error names its kind and never repeats its text, which may hold a key.
func TestClassNeverRepeatsTheText(t *testing.T) {
	t.Parallel()
	const secret = "email_secret@contoso.com"
	svc := &ServiceError{Op: "get", Resource: "T", PartitionKey: "P", RowKey: secret, StatusCode: 503, Code: "ServerBusy", Err: errors.New(secret)}
	for _, c := range []struct {
		err  error
		want string
	}{
		{svc, "503 ServerBusy"},
		{fmt.Errorf("%w: %w", ErrTransient, svc), "retries exhausted: 503 ServerBusy"},
		{fmt.Errorf("wrapped %s: %w", secret, context.Canceled), "context canceled"},
		{&OutcomeUnknownError{Op: "insert", RowKey: secret}, ErrOutcomeUnknown.Error()},
		{Invalid("RowKey", "holds %s", secret), "tablepatterns: invalid input: RowKey"},
		{fmt.Errorf("%s: %w", secret, ErrNotFound), ErrNotFound.Error()},
		{&net.OpError{Op: "read", Err: fmt.Errorf("%s: %w", secret, syscall.ECONNRESET)}, "transport: connection reset"},
		{fmt.Errorf("%s: %w", secret, errors.New(secret)), "*errors.errorString (text withheld)"},
	} {
		got := Class(c.err)
		if got != c.want || strings.Contains(got, "secret") {
			t.Errorf("Class(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	if Class(nil) != "" {
		t.Error("Class(nil) is not empty")
	}
}
