package queueworker

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
)

// Attack: a handler fails with an error from a raw Azure SDK call (or any error that prints
// a SAS URL, e.g. a *url.Error from a blob download through a SAS): the worker stores
// cause.Error() in the poison record (and logs it with zap.Error) without errs.Redact.
func TestAttackPoisonRecordCarriesHandlerSAS(t *testing.T) {
	t.Parallel()
	cause := fmt.Errorf("download attachment: %w", &url.Error{Op: "Get",
		URL: "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&se=2099-01-01T00%3A00%3A00Z&sig=U0VDUkVUU0lHTkFUVVJF", Err: io.ErrUnexpectedEOF})
	env := &envelope{Kind: "k", ID: "1", Payload: json.RawMessage(`1`)}
	text := poisonText("q", "m1", "x", env, 5, cause)
	pm := parsePoison(text)
	for _, secret := range []string{"sig=", "se=", "sp=", "U0VDUkVUU0lHTkFUVVJF"} {
		if strings.Contains(pm.Error, secret) {
			t.Errorf("poison record error %q carries %q", pm.Error, secret)
		}
	}
}
