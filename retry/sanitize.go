package retry

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// maxErrorText bounds the error text put in a log entry: azcore errors embed the whole
// response body.
const maxErrorText = 2048

var (
	// A URL's query string: SAS tokens (sig=, se=, sp=...) live there.
	urlQuery = regexp.MustCompile(`(?i)\b((?:https?|wss?)://[^\s?#"'<>]*)\?[^\s"'<>]*`)
	// key=value secrets outside URLs: connection strings, SAS tokens on their own.
	secretKV = regexp.MustCompile(`(?i)\b(sig|signature|accountkey|sharedaccesssignature|sharedaccesskey|password|pwd|secret|client_secret|access_token|refresh_token|token)(\s*=\s*)[^;&\s"',]*`)
	// Authorization headers and credentials schemes.
	authHeader = regexp.MustCompile(`(?i)\b(authorization|x-ms-authorization|proxy-authorization)(["']?\s*[:=]\s*["']?)[^\r\n"',]*`)
	authScheme = regexp.MustCompile(`(?i)\b(Bearer|SharedKey|SharedKeyLite|Basic)(\s+)[A-Za-z0-9._~+/=:-]+`)
	// The service echoes a failed request's signature in AuthenticationFailed messages.
	echoedMAC = regexp.MustCompile(`(?i)(signature found in the HTTP request ')[^']*`)
)

// sanitize returns err's text without credentials: no query strings, no SAS signatures,
// account keys, tokens or Authorization values, and an *azcore.ResponseError reduced to
// its request line, status and code (its full text embeds the response body).
func sanitize(err error) string {
	if err == nil {
		return ""
	}
	text := err.Error()
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		text = strings.ReplaceAll(text, re.Error(), summarize(re))
	}
	text = urlQuery.ReplaceAllString(text, "$1?REDACTED")
	text = secretKV.ReplaceAllString(text, "${1}${2}REDACTED")
	text = authHeader.ReplaceAllString(text, "${1}${2}REDACTED")
	text = authScheme.ReplaceAllString(text, "${1}${2}REDACTED")
	text = echoedMAC.ReplaceAllString(text, "${1}REDACTED")
	if len(text) > maxErrorText {
		text = strings.ToValidUTF8(text[:maxErrorText], "") + "...(truncated)"
	}
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	return text
}

// summarize is a one-line, body-free text for a response error.
func summarize(re *azcore.ResponseError) string {
	var b strings.Builder
	if r := re.RawResponse; r != nil && r.Request != nil && r.Request.URL != nil {
		u := r.Request.URL
		fmt.Fprintf(&b, "%s %s://%s%s: ", r.Request.Method, u.Scheme, u.Host, u.EscapedPath())
	}
	fmt.Fprintf(&b, "RESPONSE %d", re.StatusCode)
	if re.ErrorCode != "" {
		b.WriteString(" ")
		b.WriteString(re.ErrorCode)
	}
	return b.String()
}
