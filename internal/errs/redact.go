package errs

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"go.uber.org/zap"
)

// maxErrorText bounds a redacted text: azcore errors embed the whole response body.
const maxErrorText = 2048

var (
	// A URL's query string: SAS tokens (sig=, se=, sp=, spk=...) live there. The path may
	// hold anything but white space and the query/fragment marks: entity paths carry
	// quotes and parentheses, e.g. /T(PartitionKey='a',RowKey='b')?se=...&sig=...
	urlQuery = regexp.MustCompile(`(?i)\b((?:https?|wss?)://[^\s?#"<>]*)\?[^\s"<>]*`)
	// A query string met without its URL (a path alone, or a bare token): any run of
	// key=value pairs that names a SAS field.
	sasQuery = regexp.MustCompile(`(?i)[?&](?:sv|ss|srt|sp|se|st|spr|sip|sig|si|tn|spk|srk|epk|erk|skoid|sktid|skt|ske|sks|skv|sr|sdd|rscc|rscd|rsce|rscl|rsct)=[^\s"'<>]*`)
	// key=value secrets outside URLs: connection strings, SAS tokens on their own.
	secretKV = regexp.MustCompile(`(?i)\b(sig|signature|accountkey|sharedaccesssignature|sharedaccesskey|password|pwd|secret|client_secret|access_token|refresh_token|token)(\s*=\s*)[^;&\s"',]*`)
	// Authorization headers and credentials schemes.
	authHeader = regexp.MustCompile(`(?i)\b(authorization|x-ms-authorization|proxy-authorization)(["']?\s*[:=]\s*["']?)[^\r\n"',]*`)
	authScheme = regexp.MustCompile(`(?i)\b(Bearer|SharedKey|SharedKeyLite|Basic)(\s+)[A-Za-z0-9._~+/=:-]+`)
	// The service echoes a failed request's signature in AuthenticationFailed messages.
	echoedMAC = regexp.MustCompile(`(?i)(signature found in the HTTP request ')[^']*`)
)

// Redact returns err's text without credentials: no URL query strings, no SAS fields,
// account keys, tokens or Authorization values, and an *azcore.ResponseError reduced to its
// request line, status and code (its full text embeds the response body). It is the one
// place every error text and log line of the SDK goes through before it leaves: errors of
// this package print through it, retry logs through it, the worker stores it in poison
// records. nil gives "".
func Redact(err error) string {
	if err == nil {
		return ""
	}
	text := err.Error()
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		text = strings.ReplaceAll(text, re.Error(), summarize(re))
	}
	return RedactText(text)
}

// RedactText is Redact for a text already formatted.
func RedactText(text string) string {
	text = urlQuery.ReplaceAllString(text, "$1?REDACTED")
	text = sasQuery.ReplaceAllStringFunc(text, func(m string) string { return m[:1] + "REDACTED" })
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

// LogField is the zap field of an error in the SDK's logs: its redacted text (see Redact)
// under the key "error". Use it instead of zap.Error, which logs the raw text.
func LogField(err error) zap.Field { return zap.String("error", Redact(err)) }
