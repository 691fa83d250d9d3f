package repo

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
)

// The wire format of entity group transactions ($batch), written and read here rather than
// by aztables: aztables v1.4.1 does not escape quotes in the keys of update and delete
// sub-requests, returns no per-action ETags, and hides the failed action's index in a body
// it does not parse (see DESIGN.md "Traps"). batchPolicy swaps in the body rendered here
// and keeps a copy of the response for parseBatchResponse.

// wireAction is one sub-request of a $batch.
type wireAction struct {
	method  string // POST (insert), PUT (replace), MERGE, DELETE
	table   string
	pk, rk  string
	ifMatch string // "" = no If-Match header (upsert semantics for PUT/MERGE)
	body    []byte // entity JSON; nil for DELETE
}

// batchExchange travels in the request context from Submit to batchPolicy and back.
type batchExchange struct {
	actions []wireAction
	// Set by batchPolicy.
	applied     bool
	status      int
	contentType string
	response    []byte
}

type batchKey struct{}

// batchPolicy replaces the body of a $batch request whose context carries a batchExchange
// and records the raw response. It is a per-call policy, so it runs before the shared-key
// signing policy and the signature covers the new body and content type.
type batchPolicy struct{}

func (batchPolicy) Do(req *policy.Request) (*http.Response, error) {
	ex, _ := req.Raw().Context().Value(batchKey{}).(*batchExchange)
	if ex == nil || !strings.HasSuffix(req.Raw().URL.Path, "/$batch") {
		return req.Next()
	}
	endpoint := *req.Raw().URL
	endpoint.Path = strings.TrimSuffix(endpoint.Path, "$batch")
	endpoint.RawPath = ""
	endpoint.RawQuery = ""
	body, contentType, err := renderBatch(endpoint.String(), ex.actions)
	if err != nil {
		return nil, err
	}
	if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body)), contentType); err != nil {
		return nil, err
	}
	resp, err := req.Next()
	if err != nil {
		return resp, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent {
		// aztables slices the boundary out of the body without checking it: a truncated
		// or empty body would panic in the caller's goroutine. Refuse it here.
		if err := checkBatchBody(raw); err != nil {
			return nil, err
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	ex.applied = true
	ex.status = resp.StatusCode
	ex.contentType = resp.Header.Get("Content-Type")
	ex.response = raw
	return resp, nil
}

func withBatchExchange(ctx context.Context, ex *batchExchange) context.Context {
	return context.WithValue(ctx, batchKey{}, ex)
}

// entityPath is the resource path of one entity: keys with single quotes doubled (OData
// string literals), then path-escaped.
func entityPath(table, pk, rk string) string {
	return url.PathEscape(table) + "(PartitionKey='" + url.PathEscape(strings.ReplaceAll(pk, "'", "''")) +
		"',RowKey='" + url.PathEscape(strings.ReplaceAll(rk, "'", "''")) + "')"
}

func boundary(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// renderBatch renders the multipart/mixed body of a $batch with one changeset.
func renderBatch(endpoint string, actions []wireAction) ([]byte, string, error) {
	batchB, csB := boundary("batch_"), boundary("changeset_")
	var b bytes.Buffer
	b.Grow(512 + 320*len(actions) + batchBodySize(actions))
	fmt.Fprintf(&b, "--%s\r\nContent-Type: multipart/mixed; boundary=%s\r\n\r\n", batchB, csB)
	for _, a := range actions {
		writePart(&b, csB, endpoint, a)
	}
	fmt.Fprintf(&b, "--%s--\r\n--%s--\r\n", csB, batchB)
	return b.Bytes(), "multipart/mixed; boundary=" + batchB, nil
}

// writePart writes the changeset part of one action.
func writePart(b *bytes.Buffer, csB, endpoint string, a wireAction) {
	fmt.Fprintf(b, "--%s\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n", csB)
	target := endpoint + url.PathEscape(a.table)
	if a.method != http.MethodPost {
		target = endpoint + entityPath(a.table, a.pk, a.rk)
	}
	fmt.Fprintf(b, "%s %s HTTP/1.1\r\n", a.method, target)
	b.WriteString("Accept: application/json;odata=minimalmetadata\r\nDataServiceVersion: 3.0\r\n")
	if a.ifMatch != "" {
		fmt.Fprintf(b, "If-Match: %s\r\n", a.ifMatch)
	}
	if a.method == http.MethodPost {
		b.WriteString("Prefer: return-no-content\r\n")
	}
	if a.body != nil {
		fmt.Fprintf(b, "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(a.body))
		b.Write(a.body)
		b.WriteString("\r\n")
	} else {
		b.WriteString("\r\n")
	}
}

// endpointAllowance is what the measure of a transaction allows per action for the
// endpoint in its request line, unknown until the request is sent.
const endpointAllowance = 256

// partSize is the size of an action's part in a rendered $batch, with endpointAllowance
// for the endpoint (boundaries have a fixed length, so the measure is exact otherwise).
func partSize(a wireAction) int {
	var b bytes.Buffer
	b.Grow(320 + len(a.body))
	writePart(&b, boundary("changeset_"), "", a)
	return b.Len() + endpointAllowance
}

// batchFraming is the size of a rendered $batch without its parts.
var batchFraming = func() int {
	body, _, _ := renderBatch("", nil)
	return len(body)
}()

func batchBodySize(actions []wireAction) int {
	n := 0
	for _, a := range actions {
		n += len(a.body)
	}
	return n
}

// subResponse is one parsed response of a $batch changeset.
type subResponse struct {
	status  int
	etag    string
	code    string
	message string
}

// parseBatchResponse reads a $batch response body: a multipart/mixed body whose one part is
// the changeset response, itself multipart/mixed with one application/http part per action
// on success, or one part for the failed action.
func parseBatchResponse(contentType string, body []byte) ([]subResponse, error) {
	parts, err := multipartParts(contentType, body)
	if err != nil {
		return nil, err
	}
	var out []subResponse
	for _, p := range parts {
		ct := p.header.Get("Content-Type")
		if strings.HasPrefix(ct, "multipart/mixed") {
			inner, err := parseBatchResponse(ct, p.body)
			if err != nil {
				return nil, err
			}
			out = append(out, inner...)
			continue
		}
		r, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(p.body)), nil)
		if err != nil {
			return nil, fmt.Errorf("reading a $batch sub-response: %w", err)
		}
		rb, _ := io.ReadAll(r.Body)
		r.Body.Close()
		sr := subResponse{status: r.StatusCode, etag: r.Header.Get("ETag")}
		if r.StatusCode >= 300 {
			sr.code, sr.message = odataError(rb)
			if sr.code == "" {
				sr.code = r.Header.Get("x-ms-error-code")
			}
		}
		out = append(out, sr)
	}
	return out, nil
}

type part struct {
	header http.Header
	body   []byte
}

func multipartParts(contentType string, body []byte) ([]part, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		// Some responses carry the boundary only in the body's first line.
		if bytes.HasPrefix(body, []byte("--")) {
			end := bytes.IndexByte(body, '\n')
			if end > 2 {
				params = map[string]string{"boundary": strings.TrimRight(string(body[2:end]), "\r")}
				err = nil
			}
		}
		if params["boundary"] == "" {
			return nil, fmt.Errorf("$batch response is not multipart (Content-Type %q)", contentType)
		}
	}
	r := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	var out []part
	for {
		p, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("reading a $batch response part: %w", err)
		}
		b, err := io.ReadAll(p)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return out, err
		}
		out = append(out, part{header: http.Header(p.Header), body: b})
	}
}

// odataError extracts code and message from {"odata.error":{"code":..,"message":{"value":..}}}.
func odataError(b []byte) (code, message string) {
	var e struct {
		OData struct {
			Code    string `json:"code"`
			Message struct {
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	if json.Unmarshal(b, &e) != nil {
		return "", strings.TrimSpace(string(b))
	}
	return e.OData.Code, e.OData.Message.Value
}

// failedIndex reads the "N:" prefix the service puts before the message of the failed
// action of a transaction. ok is false when there is none.
func failedIndex(message string) (int, string, bool) {
	i := strings.IndexByte(message, ':')
	if i <= 0 || i > 3 {
		return 0, message, false
	}
	n, err := strconv.Atoi(message[:i])
	if err != nil {
		return 0, message, false
	}
	return n, strings.TrimSpace(message[i+1:]), true
}

// errMalformedBatch is a $batch answer whose body cannot be read. The service answered, so
// the transaction may have been committed: it is transient and leaves the outcome open
// (it wraps io.ErrUnexpectedEOF, as a body cut short would).
type errMalformedBatch struct{ reason string }

func (e *errMalformedBatch) Error() string {
	return "tablepatterns: malformed $batch response: " + e.reason
}

func (e *errMalformedBatch) Unwrap() error { return io.ErrUnexpectedEOF }

// checkBatchBody checks a 202/204 $batch body the way aztables reads it: an error document
// starting with '{', or a multipart body whose first line names the boundary, whose first
// part is a changeset whose own first line names its boundary, and whose sub-responses
// parse.
func checkBatchBody(body []byte) error {
	if len(body) > 0 && body[0] == '{' {
		return nil
	}
	outer, ok := boundaryLine(body)
	if !ok {
		return &errMalformedBatch{"no boundary line"}
	}
	p, err := multipart.NewReader(bytes.NewReader(body), outer).NextPart()
	if err != nil {
		return &errMalformedBatch{"no changeset part"}
	}
	inner, err := io.ReadAll(p)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return &errMalformedBatch{"changeset part cut short"}
	}
	if _, ok := boundaryLine(inner); !ok {
		return &errMalformedBatch{"no changeset boundary line"}
	}
	subs, err := parseBatchResponse("multipart/mixed; boundary="+outer, body)
	if err != nil || len(subs) == 0 {
		return &errMalformedBatch{"no readable sub-response"}
	}
	return nil
}

// boundaryLine returns the boundary named by the first line of a multipart body ("--b").
func boundaryLine(body []byte) (string, bool) {
	end := bytes.IndexByte(body, '\n')
	if end > 0 && body[end-1] == '\r' {
		end--
	}
	if end <= 2 || !bytes.HasPrefix(body, []byte("--")) {
		return "", false
	}
	return string(body[2:end]), true
}
