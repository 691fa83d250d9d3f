package rangejob

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// MaxConditions is the most Where conditions a selection may carry: the service accepts
// 15 comparisons per filter, and the key bounds and the checkpoint take up to 7 of them.
const MaxConditions = filter.MaxComparisons - 7

// Key is the position of an entity in a table: its PartitionKey and RowKey.
type Key struct {
	PartitionKey string `json:"pk"`
	RowKey       string `json:"rk"`
}

// Selection is which entities of a table a range job reads, and how far it has come.
//
// It is one partition (PartitionKey, optionally with RowKeyFrom/RowKeyTo), or a range of
// partitions (PartitionKeyFrom/PartitionKeyTo), and/or Where conditions; none of them is
// the whole table (a job that must not run on a whole table checks IsWholeTable). Lower
// bounds are inclusive, upper bounds exclusive, "" leaves an end open. Keys compare as
// the service orders them: by UTF-16 code units (keys.Compare).
type Selection struct {
	PartitionKey     string             `json:"pk,omitempty"`
	RowKeyFrom       string             `json:"rkFrom,omitempty"`
	RowKeyTo         string             `json:"rkTo,omitempty"`
	PartitionKeyFrom string             `json:"pkFrom,omitempty"`
	PartitionKeyTo   string             `json:"pkTo,omitempty"`
	Where            []filter.Condition `json:"where,omitempty"`
	// After is the checkpoint: the keys of the last entity an earlier run scanned. The
	// job reads only entities after it. nil starts at the beginning.
	After *Key `json:"after,omitempty"`
}

// IsWholeTable reports a selection without key bounds or conditions.
func (s Selection) IsWholeTable() bool {
	return s.PartitionKey == "" && s.PartitionKeyFrom == "" && s.PartitionKeyTo == "" && len(s.Where) == 0
}

// Validate checks the selection, its conditions and its checkpoint without sending
// anything: a selection read from a queue is untrusted.
//
// Errors: ErrInvalidInput naming the field (pk, rkFrom, rkTo, pkFrom, pkTo, where[i].…,
// after.…).
func (s Selection) Validate() error {
	_, err := s.Plan()
	return err
}

// validateBounds checks the key bounds and how many conditions there are.
func (s Selection) validateBounds() error {
	bounds := []struct{ field, v string }{
		{"pk", s.PartitionKey}, {"rkFrom", s.RowKeyFrom}, {"rkTo", s.RowKeyTo}, {"pkFrom", s.PartitionKeyFrom}, {"pkTo", s.PartitionKeyTo},
	}
	for _, k := range bounds {
		if k.v == "" {
			continue
		}
		if err := codec.ValidateKey(k.field, k.v); err != nil {
			return err
		}
	}
	switch {
	case s.PartitionKey != "" && (s.PartitionKeyFrom != "" || s.PartitionKeyTo != ""):
		return errs.Invalid("pk", "a job selects one partition (pk) or a range of partitions (pkFrom, pkTo), not both")
	case s.PartitionKey == "" && (s.RowKeyFrom != "" || s.RowKeyTo != ""):
		return errs.Invalid("rkFrom", "RowKey bounds need one partition (pk)")
	case s.RowKeyTo != "" && keys.Compare(s.RowKeyFrom, s.RowKeyTo) >= 0:
		return errs.Invalid("rkTo", "must be after rkFrom (the range %q to %q is empty)", s.RowKeyFrom, s.RowKeyTo)
	case s.PartitionKeyTo != "" && keys.Compare(s.PartitionKeyFrom, s.PartitionKeyTo) >= 0:
		return errs.Invalid("pkTo", "must be after pkFrom (the range %q to %q is empty)", s.PartitionKeyFrom, s.PartitionKeyTo)
	case len(s.Where) > MaxConditions:
		return errs.TooLarge("where", "too many conditions", len(s.Where), MaxConditions)
	}
	if s.After != nil {
		return s.CheckPosition("after", *s.After)
	}
	return nil
}

// CheckPosition checks that k is a position in the key order inside the selection's
// range: a checkpoint, or a key a scan returned. A position only bounds a scan (the scan
// is the selection AND after the checkpoint), so it needs to be text the filter can carry
// (valid UTF-8, at most a key's 1 KiB), not an address: it may be a key that a job cannot
// address (an empty PartitionKey, which sorts first, inside a range open at the bottom; a
// character the service forbids in keys, stored by a store that does not enforce it), so
// that a continuation resumes after such a key rather than refusing it (Addressable
// decides what a job acts on). One outside the range is refused: a scan that returned it
// broke its filter. field names k in errors.
//
// Errors: ErrInvalidInput naming field.
func (s Selection) CheckPosition(field string, k Key) error {
	for _, f := range []struct{ name, v string }{{field + ".pk", k.PartitionKey}, {field + ".rk", k.RowKey}} {
		if !utf8.ValidString(f.v) {
			return errs.Invalid(f.name, "is not valid UTF-8")
		}
		units := 0
		for _, r := range f.v {
			units += utf16.RuneLen(r) // valid UTF-8 holds no surrogate: 1 or 2
		}
		if units*2 > codec.MaxKeyBytes {
			return errs.TooLarge(f.name, "key longer than 1 KiB of UTF-16", units*2, codec.MaxKeyBytes)
		}
	}
	out := false
	if s.PartitionKey != "" {
		out = k.PartitionKey != s.PartitionKey || keys.Compare(k.RowKey, s.RowKeyFrom) < 0 || (s.RowKeyTo != "" && keys.Compare(k.RowKey, s.RowKeyTo) >= 0)
	} else {
		out = keys.Compare(k.PartitionKey, s.PartitionKeyFrom) < 0 || (s.PartitionKeyTo != "" && keys.Compare(k.PartitionKey, s.PartitionKeyTo) >= 0)
	}
	if out {
		return errs.Invalid(field, "the position (%q, %q) is outside the job's range", k.PartitionKey, k.RowKey)
	}
	return nil
}

// Addressable checks that the keys of an entity can be read, written and deleted one by
// one: a non-empty PartitionKey (aztables refuses an empty one on every point operation,
// and so does repo) and keys the service accepts (codec.ValidateKey). The scan of a table
// written by other clients, or kept by a store that does not enforce the key rules, can
// return others: a range job leaves them and reports them.
//
// Errors: ErrInvalidInput naming the key.
func Addressable(k Key) error {
	if k.PartitionKey == "" {
		return errs.Invalid("pk", "is empty: aztables cannot address an entity without a PartitionKey")
	}
	if err := codec.ValidateKey("PartitionKey", k.PartitionKey); err != nil {
		return err
	}
	return codec.ValidateKey("RowKey", k.RowKey)
}

// Select is what a scan of the selection reads of each entity: its keys and the
// properties its conditions name (to re-check them).
func (s Selection) Select() []string {
	sel := []string{"PartitionKey", "RowKey"}
	for _, c := range s.Where {
		if !slices.Contains(sel, c.Property) {
			sel = append(sel, c.Property)
		}
	}
	return sel
}

// ID is the message id of a range job's deliveries: kind, table and a hash of the job's
// JSON, so that duplicates of one job, and of one continuation, carry the same id. The
// caller puts case-insensitive names (table names) in one case in job first.
func ID(kind, table string, job any) string {
	b, _ := json.Marshal(job)
	sum := sha256.Sum256(b)
	return kind + "|" + table + "|" + hex.EncodeToString(sum[:12])
}
