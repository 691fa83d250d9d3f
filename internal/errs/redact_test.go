package errs

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"GET https://a.blob.core.windows.net/c/b?sv=1&sig=abc: 403", "GET https://a.blob.core.windows.net/c/b?REDACTED 403"},
		{`Get "http://127.0.0.1:10002/devstoreaccount1/t?sig=x": EOF`, `Get "http://127.0.0.1:10002/devstoreaccount1/t?REDACTED": EOF`},
		// Entity URLs carry quotes and parentheses before the query.
		{`Put "https://a.table.core.windows.net/T(PartitionKey='a',RowKey='b')?se=2030&sp=raud&spk=a&sig=abc": dial tcp: no such host`,
			`Put "https://a.table.core.windows.net/T(PartitionKey='a',RowKey='b')?REDACTED": dial tcp: no such host`},
		{"AccountName=a;AccountKey=abc+/==;EndpointSuffix=x", "AccountName=a;AccountKey=REDACTED;EndpointSuffix=x"},
		{"sig=abc&se=2030", "sig=REDACTED&REDACTED"},
		{"/devstoreaccount1/T?tn=T&sp=r&se=2030-01-01&sig=x", "/devstoreaccount1/T?REDACTED"},
		{"Authorization: SharedKey a:b=", "Authorization: REDACTED"},
		{"The MAC signature found in the HTTP request 'abc=' is not", "The MAC signature found in the HTTP request 'REDACTED' is not"},
		{"no secrets here: 503 ServerBusy", "no secrets here: 503 ServerBusy"},
	}
	for _, tt := range tests {
		if got := Redact(errors.New(tt.in)); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := Redact(errors.New(strings.Repeat("x", 5000))); len(got) > maxErrorText+20 {
		t.Errorf("Redact did not truncate: %d bytes", len(got))
	}
	if Redact(nil) != "" {
		t.Error("Redact(nil) is not empty")
	}
}

// A transport error (mistyped host, TLS failure) reaches callers as a ServiceError without a
// status: its text used to print the *url.Error whole, SAS query included.
func TestServiceErrorRedactsTransportURL(t *testing.T) {
	t.Parallel()
	raw := &url.Error{Op: "Put", URL: "https://acct.table.core.windows.net/T(PartitionKey='x',RowKey='y')?sv=2019-02-02&se=2030-01-01&sp=raud&sig=c2VjcmV0", Err: errors.New("tls: first record does not look like a TLS handshake")}
	err := Wrap(raw, "update", "T", "x", "y")
	for _, text := range []string{err.Error(), fmt.Sprint(err), fmt.Sprintf("%v", fmt.Errorf("outer: %w", err))} {
		for _, secret := range []string{"sig=", "se=", "sp=", "c2VjcmV0"} {
			if strings.Contains(text, secret) {
				t.Errorf("error text holds %q: %s", secret, text)
			}
		}
	}
	if !strings.Contains(err.Error(), "tls: first record") {
		t.Errorf("the cause was redacted away: %s", err)
	}
}
