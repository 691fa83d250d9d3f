// Package connstring parses Azure Storage connection strings strictly, for every package
// that takes one (repo/account, repo/sas): unknown keys and malformed values are refused
// with an error that names the key and quotes no secret, and a string that names explicit
// endpoints is never given the account's public ones.
package connstring

import (
	"encoding/base64"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/suggest"
)

// connStringKeys are the keys of an Azure Storage connection string (the .NET storage
// library's set, which the other Azure SDKs read as well). Keys match case-insensitively,
// as they do there.
var connStringKeys = []string{
	"DefaultEndpointsProtocol", "AccountName", "AccountKey", "SharedAccessSignature", "EndpointSuffix",
	"BlobEndpoint", "QueueEndpoint", "TableEndpoint", "FileEndpoint",
	"BlobSecondaryEndpoint", "QueueSecondaryEndpoint", "TableSecondaryEndpoint", "FileSecondaryEndpoint",
	"UseDevelopmentStorage", "DevelopmentStorageProxyUri",
}

// The development storage account (Azurite's and the storage emulator's), published by
// Microsoft: its key is not a secret.
const (
	devAccount = "devstoreaccount1"
	devKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// DefaultEndpointSuffix is the endpoint suffix of storage accounts in the Azure public
// cloud.
const DefaultEndpointSuffix = "core.windows.net"

// Parsed is a checked connection string: the service endpoints it gives (empty: none)
// and one credential (AccountName and AccountKey, or SAS).
type Parsed struct {
	AccountName, AccountKey, SAS string
	Table, Queue, Blob           string
}

// csError is the error of a connection string: field names the key, reason never quotes
// a key or a signature.
func csError(key, reasonFormat string, args ...any) error {
	return errs.Invalid(strings.TrimSpace("connection string "+key), reasonFormat, args...)
}

// Parse checks every key and value of cs and returns where and how its clients connect.
// A string that names an explicit endpoint gets the endpoints it names only: deriving the
// others from the account name would address a public endpoint the user never wrote.
//
// Errors: an *errs.InvalidInputError whose Field is "connection string KEY".
func Parse(cs string) (Parsed, error) {
	kv, err := splitConnectionString(cs)
	if err != nil {
		return Parsed{}, err
	}
	if v, ok := kv["UseDevelopmentStorage"]; ok {
		return devStorage(v, kv)
	}
	if _, ok := kv["DevelopmentStorageProxyUri"]; ok {
		return Parsed{}, csError("DevelopmentStorageProxyUri", "only goes with UseDevelopmentStorage=true")
	}
	c := Parsed{AccountName: kv["AccountName"], AccountKey: kv["AccountKey"], SAS: kv["SharedAccessSignature"]}
	_, hasKey := kv["AccountKey"]
	_, hasSAS := kv["SharedAccessSignature"]
	switch {
	case hasKey && hasSAS:
		return Parsed{}, csError("SharedAccessSignature", "and AccountKey exclude each other: give one credential")
	case hasKey:
		if c.AccountName == "" {
			return Parsed{}, csError("AccountName", "is required with AccountKey")
		}
		if !validKey(c.AccountKey) {
			return Parsed{}, csError("AccountKey", "is not an account key (base64 of the key's bytes; was it truncated when copied?)")
		}
	case hasSAS:
		c.SAS = strings.TrimPrefix(c.SAS, "?")
		if q, err := url.ParseQuery(c.SAS); err != nil || q.Get("sig") == "" {
			return Parsed{}, csError("SharedAccessSignature", "is not a shared access signature (a query with sv=...&sig=...; was it truncated when copied?)")
		}
	default:
		return Parsed{}, csError("AccountKey", "missing: give AccountName with AccountKey, or a SharedAccessSignature")
	}
	if c.AccountName != "" && (strings.ContainsFunc(c.AccountName, isNotNameRune) || len(c.AccountName) > 64) {
		return Parsed{}, csError("AccountName", "is not an account name (letters and digits)")
	}
	scheme := "https"
	if p, ok := kv["DefaultEndpointsProtocol"]; ok {
		if scheme = strings.ToLower(p); scheme != "http" && scheme != "https" {
			return Parsed{}, csError("DefaultEndpointsProtocol", "is %.10q: want https or http", p)
		}
	}
	suffix := DefaultEndpointSuffix
	if s, ok := kv["EndpointSuffix"]; ok {
		if !ValidSuffix(s) {
			return Parsed{}, csError("EndpointSuffix", "is not a host name suffix such as core.windows.net")
		}
		suffix = s
	}
	for _, k := range []string{"BlobEndpoint", "QueueEndpoint", "TableEndpoint", "FileEndpoint",
		"BlobSecondaryEndpoint", "QueueSecondaryEndpoint", "TableSecondaryEndpoint", "FileSecondaryEndpoint"} {
		if v, ok := kv[k]; ok && !validEndpoint(v) {
			// Not quoted: a pasted SAS URL carries its signature.
			return Parsed{}, csError(k, "is not an http or https URL without a query, such as https://myaccount.table.core.windows.net")
		}
	}
	for _, svc := range []string{"Table", "Queue", "Blob", "File"} {
		// Alone, a secondary would leave the primary to be derived: a public endpoint the
		// string never named (the Azure SDKs' parsers refuse it too).
		if _, ok := kv[svc+"SecondaryEndpoint"]; ok && kv[svc+"Endpoint"] == "" {
			return Parsed{}, csError(svc+"SecondaryEndpoint", "needs its primary, %sEndpoint", svc)
		}
	}
	c.Table, c.Queue, c.Blob = kv["TableEndpoint"], kv["QueueEndpoint"], kv["BlobEndpoint"]
	if c.Table != "" || c.Queue != "" || c.Blob != "" || kv["FileEndpoint"] != "" {
		if c.Table == "" && c.Queue == "" && c.Blob == "" {
			return Parsed{}, csError("FileEndpoint", "names the file service only: give a TableEndpoint, QueueEndpoint or BlobEndpoint")
		}
		return c, nil
	}
	if c.AccountName == "" {
		return Parsed{}, csError("AccountName", "missing: give AccountName, or the endpoints (TableEndpoint, QueueEndpoint, BlobEndpoint)")
	}
	if !ValidAccountName(c.AccountName) {
		return Parsed{}, csError("AccountName", "is not a storage account name (3 to 24 lowercase letters and digits), and no endpoint is given")
	}
	c.Table = scheme + "://" + c.AccountName + ".table." + suffix
	c.Queue = scheme + "://" + c.AccountName + ".queue." + suffix
	c.Blob = scheme + "://" + c.AccountName + ".blob." + suffix
	return c, nil
}

// splitConnectionString splits cs into its keys (in their canonical spelling) and values,
// refusing unknown and repeated keys, empty values and segments that are not Key=Value.
func splitConnectionString(cs string) (map[string]string, error) {
	// A byte order mark begins a string read from a file some editors saved.
	cs = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(cs), "\ufeff"))
	if cs == "" {
		return nil, csError("", "is empty")
	}
	kv := map[string]string{}
	for seg := range strings.SplitSeq(strings.TrimSuffix(cs, ";"), ";") {
		k, v, ok := strings.Cut(seg, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			// Not quoted: a stray piece may be part of the key or signature.
			return nil, csError("", "has a part that is not Key=Value (are the parts separated by semicolons?)")
		}
		i := slices.IndexFunc(connStringKeys, func(known string) bool { return strings.EqualFold(known, k) })
		if i < 0 {
			return nil, csError(printableKey(k), "unknown key%s", suggestKey(k))
		}
		k = connStringKeys[i]
		if _, dup := kv[k]; dup {
			return nil, csError(k, "is given twice")
		}
		if v = strings.TrimSpace(v); v == "" {
			return nil, csError(k, "is empty")
		}
		kv[k] = v
	}
	return kv, nil
}

// devStorage returns the endpoints of the development storage (Azurite on its default
// ports, or at the host of DevelopmentStorageProxyUri) and its published account.
func devStorage(v string, kv map[string]string) (Parsed, error) {
	if !strings.EqualFold(v, "true") {
		return Parsed{}, csError("UseDevelopmentStorage", "is %.10q: the only value is true", v)
	}
	for k := range kv {
		if k != "UseDevelopmentStorage" && k != "DevelopmentStorageProxyUri" {
			return Parsed{}, csError(k, "does not go with UseDevelopmentStorage=true (give the endpoints and the account instead)")
		}
	}
	scheme, host := "http", "127.0.0.1"
	if p, ok := kv["DevelopmentStorageProxyUri"]; ok {
		u, err := url.Parse(p)
		if err != nil || !validEndpoint(p) {
			return Parsed{}, csError("DevelopmentStorageProxyUri", "is not an http or https URL without a query")
		}
		scheme, host = u.Scheme, u.Hostname()
	}
	// JoinHostPort brackets an IPv6 literal, which Hostname returned without them.
	at := func(port string) string { return scheme + "://" + net.JoinHostPort(host, port) + "/" + devAccount }
	return Parsed{AccountName: devAccount, AccountKey: devKey, Blob: at("10000"), Queue: at("10001"), Table: at("10002")}, nil
}

// validKey reports whether key is standard base64 of a non-empty key.
func validKey(key string) bool {
	b, err := base64.StdEncoding.Strict().DecodeString(key)
	return err == nil && len(b) > 0
}

// validEndpoint reports whether s is an absolute http or https URL with a host, a port
// (when given) from 1 to 65535, no space, and no user, query or fragment. url.Parse
// takes any digits for a port and a space in a path, which only fail at the first
// request.
func validEndpoint(s string) bool {
	u, err := url.Parse(s)
	if err != nil || strings.ContainsAny(s, " ") {
		return false
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return false
		}
	}
	return (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil &&
		u.RawQuery == "" && !u.ForceQuery && u.Fragment == "" && u.Opaque == ""
}

// ValidSuffix reports whether s is a host name suffix such as core.windows.net: labels of
// letters, digits and hyphens, none empty, and nothing else.
func ValidSuffix(s string) bool {
	return !strings.ContainsAny(s, "/?#@:") && hostLabels(s)
}

// ValidAccountName reports whether name is a storage account name: 3 to 24 lowercase
// letters and digits.
func ValidAccountName(name string) bool {
	n := len(name)
	return n >= 3 && n <= 24 && strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789") == ""
}

// hostLabels reports whether s is dot-separated labels of letters, digits and hyphens, none
// empty.
func hostLabels(s string) bool {
	for _, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 || strings.Trim(l, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") != "" {
			return false
		}
	}
	return true
}

func isNotNameRune(r rune) bool {
	return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
}

// printableKey returns k when it looks like a key name (letters, at most 40): anything
// else may be a piece of the account key or the signature and is not repeated.
func printableKey(k string) string {
	if len(k) > 40 || strings.ContainsFunc(k, func(r rune) bool { return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') }) {
		return "(a key that is not a name)"
	}
	return k
}

// suggestKey returns "; did you mean X?" for the known key closest to k (at most two
// edits away), or "".
func suggestKey(k string) string {
	best, dist := "", 3
	for _, known := range connStringKeys {
		if d := suggest.Distance(strings.ToLower(k), strings.ToLower(known)); d < dist {
			best, dist = known, d
		}
	}
	if best == "" {
		return " (known: " + strings.Join(connStringKeys, ", ") + ")"
	}
	return "; did you mean " + best + "?"
}
