package account

import (
	"encoding/base64"
	"net/url"
	"slices"
	"strings"

	"github.com/tablepatterns/tablepatterns/internal/errs"
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

// connString is a parsed, checked connection string: the endpoints to build clients for
// (empty: no client) and one credential (name and key, or a SAS).
type connString struct {
	name, key, sas     string
	table, queue, blob string
}

// csError is the error of a connection string: field names the key, reason never quotes
// a key or a signature.
func csError(key, reasonFormat string, args ...any) error {
	return errs.Invalid("connection string "+key, reasonFormat, args...)
}

// parseConnectionString checks every key and value of cs and returns where and how its
// clients connect. A string that names an explicit endpoint gets clients for the
// endpoints it names only: deriving the others from the account name would address a
// public endpoint the user never wrote.
func parseConnectionString(cs string) (connString, error) {
	kv, err := splitConnectionString(cs)
	if err != nil {
		return connString{}, err
	}
	if v, ok := kv["UseDevelopmentStorage"]; ok {
		return devStorage(v, kv)
	}
	if _, ok := kv["DevelopmentStorageProxyUri"]; ok {
		return connString{}, csError("DevelopmentStorageProxyUri", "only goes with UseDevelopmentStorage=true")
	}
	c := connString{name: kv["AccountName"], key: kv["AccountKey"], sas: kv["SharedAccessSignature"]}
	_, hasKey := kv["AccountKey"]
	_, hasSAS := kv["SharedAccessSignature"]
	switch {
	case hasKey && hasSAS:
		return connString{}, csError("SharedAccessSignature", "and AccountKey exclude each other: give one credential")
	case hasKey:
		if c.name == "" {
			return connString{}, csError("AccountName", "is required with AccountKey")
		}
		if !validKey(c.key) {
			return connString{}, csError("AccountKey", "is not an account key (base64 of the key's bytes; was it truncated when copied?)")
		}
	case hasSAS:
		c.sas = strings.TrimPrefix(c.sas, "?")
		if q, err := url.ParseQuery(c.sas); err != nil || q.Get("sig") == "" {
			return connString{}, csError("SharedAccessSignature", "is not a shared access signature (a query with sv=...&sig=...; was it truncated when copied?)")
		}
	default:
		return connString{}, csError("AccountKey", "missing: give AccountName with AccountKey, or a SharedAccessSignature")
	}
	if c.name != "" && (strings.ContainsFunc(c.name, isNotNameRune) || len(c.name) > 64) {
		return connString{}, csError("AccountName", "is not an account name (letters and digits)")
	}
	scheme := "https"
	if p, ok := kv["DefaultEndpointsProtocol"]; ok {
		if scheme = strings.ToLower(p); scheme != "http" && scheme != "https" {
			return connString{}, csError("DefaultEndpointsProtocol", "is %.10q: want https or http", p)
		}
	}
	suffix := DefaultEndpointSuffix
	if s, ok := kv["EndpointSuffix"]; ok {
		if !validSuffix(s) {
			return connString{}, csError("EndpointSuffix", "is not a host name suffix such as core.windows.net")
		}
		suffix = s
	}
	for _, k := range []string{"BlobEndpoint", "QueueEndpoint", "TableEndpoint", "FileEndpoint",
		"BlobSecondaryEndpoint", "QueueSecondaryEndpoint", "TableSecondaryEndpoint", "FileSecondaryEndpoint"} {
		if v, ok := kv[k]; ok && !validEndpoint(v) {
			// Not quoted: a pasted SAS URL carries its signature.
			return connString{}, csError(k, "is not an http or https URL without a query, such as https://myaccount.table.core.windows.net")
		}
	}
	c.table, c.queue, c.blob = kv["TableEndpoint"], kv["QueueEndpoint"], kv["BlobEndpoint"]
	if c.table != "" || c.queue != "" || c.blob != "" || kv["FileEndpoint"] != "" {
		if c.table == "" && c.queue == "" && c.blob == "" {
			return connString{}, csError("FileEndpoint", "names the file service only: give a TableEndpoint, QueueEndpoint or BlobEndpoint")
		}
		return c, nil
	}
	if c.name == "" {
		return connString{}, csError("AccountName", "missing: give AccountName, or the endpoints (TableEndpoint, QueueEndpoint, BlobEndpoint)")
	}
	if _, err := PublicEndpoints(c.name, suffix); err != nil {
		return connString{}, csError("AccountName", "is not a storage account name (3 to 24 lowercase letters and digits), and no endpoint is given")
	}
	c.table = scheme + "://" + c.name + ".table." + suffix
	c.queue = scheme + "://" + c.name + ".queue." + suffix
	c.blob = scheme + "://" + c.name + ".blob." + suffix
	return c, nil
}

// splitConnectionString splits cs into its keys (in their canonical spelling) and values,
// refusing unknown and repeated keys, empty values and segments that are not Key=Value.
func splitConnectionString(cs string) (map[string]string, error) {
	cs = strings.TrimSpace(cs)
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
func devStorage(v string, kv map[string]string) (connString, error) {
	if !strings.EqualFold(v, "true") {
		return connString{}, csError("UseDevelopmentStorage", "is %.10q: the only value is true", v)
	}
	for k := range kv {
		if k != "UseDevelopmentStorage" && k != "DevelopmentStorageProxyUri" {
			return connString{}, csError(k, "does not go with UseDevelopmentStorage=true (give the endpoints and the account instead)")
		}
	}
	base := "http://127.0.0.1"
	if p, ok := kv["DevelopmentStorageProxyUri"]; ok {
		u, err := url.Parse(p)
		if err != nil || !validEndpoint(p) {
			return connString{}, csError("DevelopmentStorageProxyUri", "is not an http or https URL without a query")
		}
		base = u.Scheme + "://" + u.Hostname()
	}
	return connString{name: devAccount, key: devKey,
		blob: base + ":10000/" + devAccount, queue: base + ":10001/" + devAccount, table: base + ":10002/" + devAccount}, nil
}

// validKey reports whether key is standard base64 of a non-empty key.
func validKey(key string) bool {
	b, err := base64.StdEncoding.Strict().DecodeString(key)
	return err == nil && len(b) > 0
}

// validEndpoint reports whether s is an absolute http or https URL with a host and no
// user, query or fragment.
func validEndpoint(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil &&
		u.RawQuery == "" && !u.ForceQuery && u.Fragment == "" && u.Opaque == ""
}

// validSuffix reports whether s is a host name suffix such as core.windows.net.
func validSuffix(s string) bool {
	return !strings.ContainsAny(s, "/?#@:") && hostLabels(s)
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
		if d := editDistance(strings.ToLower(k), strings.ToLower(known)); d < dist {
			best, dist = known, d
		}
	}
	if best == "" {
		return " (known: " + strings.Join(connStringKeys, ", ") + ")"
	}
	return "; did you mean " + best + "?"
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
