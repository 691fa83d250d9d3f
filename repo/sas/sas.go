package sas

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/connstring"
	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Version is the signed version (sv) tokens are made for by default: 2019-02-02, the
// version aztables v1.4.1 speaks. The table string-to-sign is the same for every version
// from 2015-04-05 on.
const Version = "2019-02-02"

// minVersion is the first version whose table string-to-sign has signedIP and
// signedProtocol, the format this package writes.
const minVersion = "2015-04-05"

// TimeFormat is how start and expiry are written and signed: ISO 8601 in UTC to the
// second, one of the formats the service accepts.
const TimeFormat = "2006-01-02T15:04:05Z"

// Permissions are the operations a table SAS allows (the service letters, in the order
// the service requires: "raud").
type Permissions struct {
	// Query allows Get Entity and Query Entities ("r").
	Query bool
	// Add allows Insert Entity ("a"); with Update, also upserts.
	Add bool
	// Update allows Update and Merge Entity ("u"); with Add, also upserts.
	Update bool
	// Delete allows Delete Entity ("d").
	Delete bool
}

// String returns the signed permissions, e.g. "raud" or "ra".
func (p Permissions) String() string {
	var b []byte
	if p.Query {
		b = append(b, 'r')
	}
	if p.Add {
		b = append(b, 'a')
	}
	if p.Update {
		b = append(b, 'u')
	}
	if p.Delete {
		b = append(b, 'd')
	}
	return string(b)
}

// ParsePermissions reads permission letters (any order, each at most once).
// Errors: ErrInvalidInput for another letter or a repeated one.
func ParsePermissions(s string) (Permissions, error) {
	var p Permissions
	for _, c := range s {
		var f *bool
		switch c {
		case 'r':
			f = &p.Query
		case 'a':
			f = &p.Add
		case 'u':
			f = &p.Update
		case 'd':
			f = &p.Delete
		default:
			return Permissions{}, errs.Invalid("permissions", "%q is not a table permission (r, a, u, d)", c)
		}
		if *f {
			return Permissions{}, errs.Invalid("permissions", "%q appears twice", c)
		}
		*f = true
	}
	return p, nil
}

// Protocol is the signed protocol (spr).
type Protocol string

const (
	// HTTPSOnly allows requests over HTTPS only. It is the default: a token is a bearer
	// secret, and one sent over plain HTTP can be read and replayed by anyone on the path.
	HTTPSOnly Protocol = "https"
	// HTTPSAndHTTP allows HTTPS and HTTP. Ask for it explicitly, and only for an endpoint
	// that has no HTTPS (the emulator on loopback).
	HTTPSAndHTTP Protocol = "https,http"
)

// IPRange is the signed IP range (sip): the addresses requests may come from, inclusive.
// The zero IPRange allows every address.
type IPRange struct {
	// Start is the first (or only) allowed IPv4 address.
	Start netip.Addr
	// End is the last allowed address; the zero Addr means Start alone.
	End netip.Addr
}

// String returns the signed form: "168.1.5.65" or "168.1.5.60-168.1.5.70".
func (r IPRange) String() string {
	if !r.Start.IsValid() {
		return ""
	}
	if !r.End.IsValid() {
		return r.Start.String()
	}
	return r.Start.String() + "-" + r.End.String()
}

func (r IPRange) validate() error {
	if !r.Start.IsValid() {
		if r.End.IsValid() {
			return errs.Invalid("IPRange", "has an End without a Start")
		}
		return nil
	}
	if !r.Start.Is4() || (r.End.IsValid() && !r.End.Is4()) {
		return errs.Invalid("IPRange", "%s: the service's signed IP accepts IPv4 addresses only", r)
	}
	if r.End.IsValid() && r.End.Less(r.Start) {
		return errs.Invalid("IPRange", "%s: the end comes before the start", r)
	}
	return nil
}

// Range limits a token to a range of entities, inclusive at both ends (startpk, startrk,
// endpk, endrk). Queries made with the token return only entities in the range, and
// writes outside it fail. The zero Range is the whole table. A bound left "" is absent
// (no limit on that side); a RowKey bound needs the PartitionKey bound of its side.
//
// The service's rules, which Contains implements:
//
//	StartPartitionKey               PartitionKey >= StartPartitionKey
//	EndPartitionKey                 PartitionKey <= EndPartitionKey
//	StartPartitionKey, StartRowKey  PartitionKey > StartPartitionKey, or
//	                                PartitionKey == StartPartitionKey and RowKey >= StartRowKey
//	EndPartitionKey, EndRowKey      PartitionKey < EndPartitionKey, or
//	                                PartitionKey == EndPartitionKey and RowKey <= EndRowKey
type Range struct {
	StartPartitionKey, StartRowKey string
	EndPartitionKey, EndRowKey     string
}

// Partition is the range of one partition: the guide's token for a user or device that
// owns its partition.
func Partition(pk string) Range { return Range{StartPartitionKey: pk, EndPartitionKey: pk} }

// PartitionRange is the range of the partitions from start to end, inclusive.
func PartitionRange(start, end string) Range {
	return Range{StartPartitionKey: start, EndPartitionKey: end}
}

// RowRange is the range of the RowKeys from startRK to endRK, inclusive, in partition pk.
func RowRange(pk, startRK, endRK string) Range {
	return Range{StartPartitionKey: pk, StartRowKey: startRK, EndPartitionKey: pk, EndRowKey: endRK}
}

// Entity is the range of one entity.
func Entity(pk, rk string) Range { return RowRange(pk, rk, rk) }

// IsZero reports whether r is the whole table.
func (r Range) IsZero() bool { return r == Range{} }

// Contains reports whether the entity with these keys is in r, by the service's rules
// (above). Keys compare as Go strings (bytes of UTF-8); the service compares UTF-16 code
// units, which agrees for every character of the Basic Multilingual Plane.
func (r Range) Contains(pk, rk string) bool {
	if r.StartPartitionKey != "" {
		if r.StartRowKey == "" {
			if pk < r.StartPartitionKey {
				return false
			}
		} else if !(pk > r.StartPartitionKey || pk == r.StartPartitionKey && rk >= r.StartRowKey) {
			return false
		}
	}
	if r.EndPartitionKey != "" {
		if r.EndRowKey == "" {
			if pk > r.EndPartitionKey {
				return false
			}
		} else if !(pk < r.EndPartitionKey || pk == r.EndPartitionKey && rk <= r.EndRowKey) {
			return false
		}
	}
	return true
}

func (r Range) validate() error {
	for _, k := range []struct{ field, value string }{
		{"Range.StartPartitionKey", r.StartPartitionKey}, {"Range.StartRowKey", r.StartRowKey},
		{"Range.EndPartitionKey", r.EndPartitionKey}, {"Range.EndRowKey", r.EndRowKey},
	} {
		if err := codec.ValidateKey(k.field, k.value); err != nil {
			return err
		}
	}
	if r.StartRowKey != "" && r.StartPartitionKey == "" {
		return errs.Invalid("Range.StartRowKey", "needs a StartPartitionKey (the service requires startpk with startrk)")
	}
	if r.EndRowKey != "" && r.EndPartitionKey == "" {
		return errs.Invalid("Range.EndRowKey", "needs an EndPartitionKey (the service requires endpk with endrk)")
	}
	if r.StartPartitionKey != "" && r.EndPartitionKey != "" {
		empty := r.StartPartitionKey > r.EndPartitionKey ||
			r.StartPartitionKey == r.EndPartitionKey && r.StartRowKey != "" && r.EndRowKey != "" && r.StartRowKey > r.EndRowKey
		if empty {
			return errs.Invalid("Range", "starts after it ends: the token would allow no entity")
		}
	}
	return nil
}

// Values are the fields of a table service SAS. Build one, then Sign it.
type Values struct {
	// Table is the table the token is for (tn). Required.
	Table string
	// Permissions are the operations allowed (sp). Required unless Identifier names a
	// stored access policy that sets them.
	Permissions Permissions
	// Start is when the token becomes valid (st); the zero time means at once. Keep it a
	// few minutes in the past if clocks may differ.
	Start time.Time
	// Expiry is when the token stops being valid (se). Required unless Identifier names a
	// stored access policy that sets it. Keep tokens short-lived: an ad hoc token can only
	// be revoked by regenerating the account key.
	Expiry time.Time
	// Identifier names a stored access policy of the table (si), up to 64 printable
	// characters without line breaks (each field is one line of the string-to-sign): the
	// way to revoke tokens early.
	Identifier string
	// IP limits the addresses requests may come from (sip).
	IP IPRange
	// Protocol limits the protocol (spr). Defaults to HTTPSOnly; HTTP is allowed only
	// with HTTPSAndHTTP, given explicitly. The token always carries spr.
	Protocol Protocol
	// Range limits the token to a range of entities (spk, srk, epk, erk).
	Range Range
	// Version is the signed version (sv), 2015-04-05 or later. Defaults to Version.
	Version string
}

func (v Values) withDefaults() Values {
	if v.Version == "" {
		v.Version = Version
	}
	if v.Protocol == "" {
		v.Protocol = HTTPSOnly
	}
	return v
}

// printableLine reports whether s is valid UTF-8 of printable characters only: no control
// character, no line or paragraph separator, so it stays one line of the string-to-sign.
func printableLine(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func (v Values) validate() error {
	if err := codec.ValidateTableName(v.Table); err != nil {
		return err
	}
	if v.Identifier == "" {
		if v.Permissions == (Permissions{}) {
			return errs.Invalid("Permissions", "are empty: a token without a stored access policy must grant at least one of r, a, u, d")
		}
		if v.Expiry.IsZero() {
			return errs.Invalid("Expiry", "is required for a token without a stored access policy (Identifier)")
		}
	}
	if n := utf8.RuneCountInString(v.Identifier); n > 64 {
		return errs.TooLarge("Identifier", "a signed identifier has at most 64 characters", n, 64)
	}
	if !printableLine(v.Identifier) {
		return errs.Invalid("Identifier", "must be printable characters without line breaks (it is one line of the string-to-sign)")
	}
	if !v.Start.IsZero() && !v.Expiry.IsZero() && !v.Start.Truncate(time.Second).Before(v.Expiry.Truncate(time.Second)) {
		return errs.Invalid("Expiry", "must come after Start (to the second)")
	}
	switch v.Protocol {
	case HTTPSOnly, HTTPSAndHTTP:
	default:
		return errs.Invalid("Protocol", "%q: the service accepts \"https\" or \"https,http\" (HTTP alone is not permitted)", string(v.Protocol))
	}
	if _, err := time.Parse("2006-01-02", v.Version); err != nil || v.Version < minVersion {
		return errs.Invalid("Version", "%q: this package signs the table format of version %s and later (YYYY-MM-DD)", v.Version, minVersion)
	}
	if err := v.IP.validate(); err != nil {
		return err
	}
	return v.Range.validate()
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(TimeFormat)
}

// StringToSign returns the string-to-sign of the token for account: the fields of the
// table format of "Create a service SAS" (version 2015-04-05 and later), one per line,
// empty for fields not set:
//
//	signedPermissions \n signedStart \n signedExpiry \n /table/<account>/<table, lowercase> \n
//	signedIdentifier \n signedIP \n signedProtocol \n signedVersion \n
//	startingPartitionKey \n startingRowKey \n endingPartitionKey \n endingRowKey
//
// Errors: ErrInvalidInput (see Sign).
func (v Values) StringToSign(account string) (string, error) {
	v = v.withDefaults()
	if err := v.validate(); err != nil {
		return "", err
	}
	if account == "" {
		return "", errs.Invalid("account", "is empty")
	}
	return v.stringToSign(account), nil
}

func (v Values) stringToSign(account string) string {
	return strings.Join([]string{
		v.Permissions.String(),
		formatTime(v.Start),
		formatTime(v.Expiry),
		"/table/" + account + "/" + strings.ToLower(v.Table),
		v.Identifier,
		v.IP.String(),
		string(v.Protocol),
		v.Version,
		v.Range.StartPartitionKey,
		v.Range.StartRowKey,
		v.Range.EndPartitionKey,
		v.Range.EndRowKey,
	}, "\n")
}

// Sign signs v with the account key and returns the token: the query string to append to
// the table service URL (see repo.NewTablesWithSAS), without a leading "?". Every signed
// field that is set is in it — unlike aztables v1.4.1, whose key-range tokens sign the
// range but leave it out of the URL, so that the service refuses them. Values are
// percent-encoded (a space is %20).
//
// The token is a bearer secret: whoever holds it has its permissions until it expires.
// Hand it out over HTTPS only and never log it.
//
// Errors: ErrInvalidInput (nothing signed) for a bad table name; no permissions or no
// expiry without an Identifier; Start not before Expiry; an Identifier over 64 characters
// or with a control character, a line break or invalid UTF-8;
// a protocol other than HTTPSOnly or HTTPSAndHTTP; a Version before 2015-04-05; an IPv6
// or reversed IP range; a range bound that is not a valid key, a RowKey bound without its
// PartitionKey bound, or a range that starts after it ends; a nil key.
func (v Values) Sign(key *SharedKey) (string, error) {
	if key == nil {
		return "", errs.Invalid("key", "is nil")
	}
	v = v.withDefaults()
	if err := v.validate(); err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, key.key)
	mac.Write([]byte(v.stringToSign(key.account)))
	sig := base64.StdEncoding.EncodeToString(mac.Sum(nil))

	var b strings.Builder
	add := func(name, value string) {
		if value == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(escape(value))
	}
	add("sv", v.Version)
	add("tn", v.Table)
	add("sp", v.Permissions.String())
	add("st", formatTime(v.Start))
	add("se", formatTime(v.Expiry))
	add("sip", v.IP.String())
	add("spr", string(v.Protocol))
	add("si", v.Identifier)
	add("spk", v.Range.StartPartitionKey)
	add("srk", v.Range.StartRowKey)
	add("epk", v.Range.EndPartitionKey)
	add("erk", v.Range.EndRowKey)
	add("sig", sig)
	return b.String(), nil
}

// escape percent-encodes a query value, with %20 for a space: a '+' would mean a space to
// some decoders and a plus to others.
func escape(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

// SharedKey is a storage account name and key, the credential that signs tokens. Keep it
// on the server side (the guide: generate tokens where the account key is safe, in a web
// or worker role, and hand them out). Its String and GoString never print the key.
type SharedKey struct {
	account string
	key     []byte
}

// NewSharedKey returns the credential of account with its base64 account key.
// Errors: ErrInvalidInput for an empty account name or a key that is not base64 (the
// error never quotes the key).
func NewSharedKey(account, base64Key string) (*SharedKey, error) {
	if account == "" {
		return nil, errs.Invalid("account", "is empty")
	}
	k, err := base64.StdEncoding.DecodeString(base64Key)
	if err != nil || len(k) == 0 {
		return nil, errs.Invalid("account key", "is not a base64 storage account key")
	}
	return &SharedKey{account: account, key: k}, nil
}

// SharedKeyFromConnectionString returns the credential and the table service endpoint of
// a connection string with AccountName and AccountKey: its TableEndpoint or, when it names
// no endpoint, PROTOCOL://ACCOUNT.table.SUFFIX (https and core.windows.net by default). The
// string is checked as account.NewClients checks it: every key known (case-insensitive),
// given once, with a well-formed value.
//
// Errors: an *InvalidInputError (ErrInvalidInput) whose Field names the offending key,
// never quoting the connection string, which holds the key: for an unknown key or a
// malformed value, a SAS connection string (it cannot sign tokens), or a string that
// names other endpoints but no TableEndpoint.
func SharedKeyFromConnectionString(connectionString string) (key *SharedKey, tableEndpoint string, err error) {
	p, err := connstring.Parse(connectionString)
	if err != nil {
		return nil, "", err
	}
	if p.AccountKey == "" {
		return nil, "", errs.Invalid("connection string AccountKey", "missing: a SAS connection string cannot sign tokens")
	}
	if p.Table == "" {
		return nil, "", errs.Invalid("connection string TableEndpoint", "missing: the string names other endpoints only")
	}
	if key, err = NewSharedKey(p.AccountName, p.AccountKey); err != nil {
		return nil, "", err
	}
	return key, strings.TrimRight(p.Table, "/"), nil
}

// AccountName returns the storage account name.
func (k *SharedKey) AccountName() string { return k.account }

// String names the account, never the key. It has a value receiver so that printing a
// SharedKey value, not only a pointer, cannot reveal the key.
func (k SharedKey) String() string { return "sas.SharedKey(" + k.account + ")" }

// GoString is String, for %#v.
func (k SharedKey) GoString() string { return k.String() }
