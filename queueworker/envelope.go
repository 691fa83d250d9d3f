package queueworker

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// MaxMessageSize is the largest message text Azure Queue storage accepts, in bytes: 64 KiB.
// It applies to the text as sent, so to the base64 form of an envelope (4/3 of its JSON).
const MaxMessageSize = 64 * 1024

// envelope is the JSON document every message carries. Uncounted counts the deliveries
// that must not count towards MaxDequeueCount (those that ended in Snooze or were
// interrupted by a shutdown), since the service's DequeueCount cannot be reset; only the
// worker writes it, by rewriting the message text when it releases such a delivery.
type envelope struct {
	Kind       string          `json:"kind"`
	ID         string          `json:"id"`
	Payload    json.RawMessage `json:"payload"`
	EnqueuedAt time.Time       `json:"enqueuedAt"`
	Uncounted  int64           `json:"uncounted,omitempty"`
	// Trace is the W3C trace context (traceparent, tracestate) of the span that enqueued
	// the message, so that the handler's span joins the producer's trace. Untrusted: see
	// internal/telemetry.Extract.
	Trace map[string]string `json:"trace,omitempty"`
}

// encoding is the form a message text was found in, kept so that a rewrite (Snooze) does
// not change it under a consumer that expects one form.
type encoding uint8

const (
	encBase64 encoding = iota // base64 of the JSON (our writes, Azure Functions/WebJobs)
	encRaw                    // the JSON itself (azqueue does not encode; other writers)
)

// encodeEnvelope returns the message text for env in the form enc.
func encodeEnvelope(env *envelope, enc encoding) (string, error) {
	raw, err := json.Marshal(env)
	if err != nil {
		return "", err
	}
	return encodeText(raw, enc), nil
}

// encodeText returns JSON bytes as a message text in the form enc.
func encodeText(raw []byte, enc encoding) string {
	if enc == encRaw {
		return string(raw)
	}
	return base64.StdEncoding.EncodeToString(raw)
}

// errMalformed marks a message text that is no envelope. Such a message can never succeed,
// so the worker moves it to the poison queue at its first delivery.
var errMalformed = errors.New("queueworker: malformed message")

// decodeJSONText returns the JSON bytes of a message text in either form. The forms cannot
// be confused: JSON text starts with '{' (after optional white space), which is not a
// base64 character.
func decodeJSONText(text string) ([]byte, encoding, error) {
	b := bytes.TrimSpace([]byte(text))
	if len(b) > 0 && b[0] == '{' {
		return b, encRaw, nil
	}
	dec := make([]byte, base64.StdEncoding.DecodedLen(len(b)))
	n, err := base64.StdEncoding.Decode(dec, b)
	if err != nil {
		return nil, encBase64, fmt.Errorf("%w: neither JSON nor base64: %v", errMalformed, err)
	}
	return bytes.TrimSpace(dec[:n]), encBase64, nil
}

// decodeEnvelope parses a message text in either form.
func decodeEnvelope(text string) (*envelope, encoding, error) {
	b, enc, err := decodeJSONText(text)
	if err != nil {
		return nil, enc, err
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, enc, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if env.Kind == "" {
		return nil, enc, fmt.Errorf("%w: no kind", errMalformed)
	}
	return &env, enc, nil
}

// checkSize refuses a message text over MaxMessageSize before it is sent.
func checkSize(field, text string) error {
	if len(text) > MaxMessageSize {
		return errs.TooLarge(field, "encoded queue message (base64 of the JSON envelope) over the 64 KiB service limit", len(text), MaxMessageSize)
	}
	return nil
}
