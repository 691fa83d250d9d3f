package indexentity

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// The key layout of index entities. Option 2 keeps a value's pages in the primary's
// partition under RowKeys "idx!<name>!<value>!<page>"; option 3 keeps them in a partition
// of their own, "idx!<name>!<value>", under RowKeys "<page>". Both are built with the
// escaped, order-preserving encoding of codec/keys, so any value (quotes, slashes, '#',
// non-ASCII) gives a valid key and the pages of one value are one contiguous range.
const (
	tagIndex  = "idx"
	pageWidth = 6 // page numbers are zero-padded: "000000" ... "999999"
	maxPages  = 999999
)

// entrySep separates the entries of a page's list. Keys may not contain control characters
// (U+0000 to U+001F), so no entry can contain it and the list splits without escaping.
const entrySep = "\n"

// keySep separates PartitionKey and RowKey in an entry that names an entity of another
// partition (options 1 and 3), for the same reason.
const keySep = "\t"

// DefaultPageBytes is the default capacity of one index page: the whole 64 KiB an Edm.String
// property may hold, measured in UTF-16 as the service stores it (codec.MaxStringBytes).
// Six-digit employee ids take 14 bytes each with their separator: about 4,600 ids per page.
const DefaultPageBytes = codec.MaxStringBytes

// minPageBytes is the smallest page capacity accepted (for tests and tiny lists).
const minPageBytes = 64

// utf16Bytes returns the size of s as the service stores it: 2 bytes per UTF-16 code unit.
func utf16Bytes(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 4
		} else {
			n += 2
		}
	}
	return n
}

// location says where the pages of one indexed value live: partition pk, RowKeys in
// [lo, hi) (both empty: the whole partition), page n under rowKey(n).
type location struct {
	pk     string
	lo, hi string
	rowKey func(n int) string
}

func (l location) filter() filter.Expr { return filter.RowKeyRange(l.pk, l.lo, l.hi) }

// page is one index entity as read: its RowKey, ETag and sorted entries.
type page struct {
	rk      string
	etag    string
	entries []string
	size    int // UTF-16 bytes of the joined list
}

func listSize(entries []string) int {
	if len(entries) == 0 {
		return 0
	}
	n := 2 * (len(entries) - 1)
	for _, e := range entries {
		n += utf16Bytes(e)
	}
	return n
}

// pageStore reads and plans writes of paged lists stored as dynamic entities with one string
// property. Every page holds at most capacity bytes (UTF-16) in that property, so an index
// entity never comes near the 64 KiB property or the 1 MiB entity limit however long its
// list grows: a full page spills into the next one.
type pageStore struct {
	tbl      *repo.Table[codec.Entity]
	prop     string
	capacity int
}

// read returns the pages of l in RowKey order (one range query; usually one page).
func (s *pageStore) read(ctx context.Context, l location) ([]*page, error) {
	ents, err := s.tbl.Collect(ctx, repo.Query{Filter: l.filter()})
	if err != nil {
		return nil, err
	}
	out := make([]*page, 0, len(ents))
	for i := range ents {
		e := &ents[i]
		raw, _ := e.Properties[s.prop].(string)
		p := &page{rk: e.RowKey, etag: e.ETag}
		if raw != "" {
			p.entries = strings.Split(raw, entrySep)
			slices.Sort(p.entries) // written sorted; sorting again costs little and tolerates other writers
			p.entries = slices.Compact(p.entries)
		}
		p.size = listSize(p.entries)
		out = append(out, p)
	}
	return out, nil
}

// entries returns the distinct entries of pages, sorted.
func entriesOf(pages []*page) []string {
	var out []string
	for _, p := range pages {
		out = append(out, p.entries...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (s *pageStore) entity(l location, rk, etag string, entries []string) *codec.Entity {
	return &codec.Entity{
		PartitionKey: l.pk, RowKey: rk, ETag: etag,
		Properties: map[string]any{s.prop: strings.Join(entries, entrySep)},
	}
}

// fits reports whether an entry of this size can ever be stored (checked before any request).
func (s *pageStore) fits(entry string) error {
	if n := utf16Bytes(entry); n > s.capacity {
		return errs.TooLarge("index entry", "longer than one index page can hold (UTF-16 bytes)", n, s.capacity)
	}
	return nil
}

// place decides where entry goes: present when some page lists it already; otherwise
// the first page with room (i >= 0), or, when every page is full, a new page under the
// lowest free number (i == -1, rk its RowKey).
func (s *pageStore) place(l location, pages []*page, entry string) (i int, rk string, present bool, err error) {
	for _, p := range pages {
		if _, found := slices.BinarySearch(p.entries, entry); found {
			return 0, "", true, nil
		}
	}
	cost := utf16Bytes(entry)
	for i, p := range pages {
		extra := cost
		if len(p.entries) > 0 {
			extra += 2
		}
		if p.size+extra <= s.capacity {
			return i, p.rk, false, nil
		}
	}
	used := make(map[string]bool, len(pages))
	for _, p := range pages {
		used[p.rk] = true
	}
	for n := 0; n <= maxPages; n++ {
		if rk := l.rowKey(n); !used[rk] {
			return -1, rk, false, nil
		}
	}
	return 0, "", false, errs.TooLarge("index", "every page number is taken", len(pages), maxPages+1)
}

// withEntry returns p's entries with entry inserted in order (a new slice).
func withEntry(p *page, entry string) []string {
	i, _ := slices.BinarySearch(p.entries, entry)
	return slices.Insert(slices.Clone(p.entries), i, entry)
}

// planAdd returns the write that adds entry to the list in pages, or ok false when some page
// already lists it. The write goes to the first page with room, conditional on its ETag;
// when every page is full it inserts a new page under the lowest free number, so two
// writers that spill at once race on the same insert and one of them retries.
func (s *pageStore) planAdd(l location, pages []*page, entry string) (repo.Action, bool, error) {
	i, rk, present, err := s.place(l, pages, entry)
	switch {
	case err != nil || present:
		return repo.Action{}, false, err
	case i < 0:
		return s.tbl.InsertAction(s.entity(l, rk, "", []string{entry})), true, nil
	}
	p := pages[i]
	return s.tbl.UpdateAction(s.entity(l, p.rk, p.etag, withEntry(p, entry)), nil), true, nil
}

// planGuard returns a rewrite of the page that lists entry, unchanged and conditional on
// its ETag, or ok false when no page lists it. Sent in the same transaction as a write
// that relies on the entry being listed, it makes that transaction fail (412) if another
// writer removed the entry after it was read: the entry's presence was read, not locked.
func (s *pageStore) planGuard(l location, pages []*page, entry string) (repo.Action, bool) {
	for _, p := range pages {
		if _, found := slices.BinarySearch(p.entries, entry); found {
			return s.tbl.UpdateAction(s.entity(l, p.rk, p.etag, p.entries), nil), true
		}
	}
	return repo.Action{}, false
}

// planRemove returns the writes that remove entry from every page that lists it (normally
// one), each conditional on the page's ETag; a page left empty is deleted.
func (s *pageStore) planRemove(l location, pages []*page, entry string) []repo.Action {
	var out []repo.Action
	for _, p := range pages {
		i, found := slices.BinarySearch(p.entries, entry)
		if !found {
			continue
		}
		if len(p.entries) == 1 {
			out = append(out, s.tbl.DeleteAction(l.pk, p.rk, &repo.DeleteOptions{ETag: p.etag}))
			continue
		}
		next := slices.Delete(slices.Clone(p.entries), i, i+1)
		out = append(out, s.tbl.UpdateAction(s.entity(l, p.rk, p.etag, next), nil))
	}
	return out
}

// pageNumber formats n for a RowKey.
func pageNumber(n int) string {
	s, _ := keys.Pad(int64(n), pageWidth) // n is in [0, maxPages]: Pad cannot fail
	return s
}

// checkValue refuses values no index key can be built from.
func checkValue(value string) error {
	if value == "" {
		return errs.Invalid("value", "is empty: an empty value is never indexed")
	}
	if !utf8.ValidString(value) {
		return errs.Invalid("value", "is not valid UTF-8")
	}
	return nil
}

// entryOf and keyOf convert between a Key and its entry in a list of options 1 and 3.
func entryOf(k Key) string { return k.PartitionKey + keySep + k.RowKey }

func keyOf(entry string) (Key, bool) {
	pk, rk, ok := strings.Cut(entry, keySep)
	return Key{PartitionKey: pk, RowKey: rk}, ok
}

// Key identifies an entity: its PartitionKey and RowKey.
type Key struct {
	PartitionKey, RowKey string
}

// compareKeys orders keys as the service does: by PartitionKey, then RowKey, each by
// UTF-16 code units (keys.Compare).
func compareKeys(a, b Key) int {
	if c := keys.Compare(a.PartitionKey, b.PartitionKey); c != 0 {
		return c
	}
	return keys.Compare(a.RowKey, b.RowKey)
}

// checkKey validates a key the way every request path needs it: both parts valid key
// strings, the PartitionKey not empty (aztables cannot address it).
func checkKey(k Key) error {
	if k.PartitionKey == "" {
		return errs.Invalid("PartitionKey", "is empty")
	}
	if err := codec.ValidateKey("PartitionKey", k.PartitionKey); err != nil {
		return err
	}
	return codec.ValidateKey("RowKey", k.RowKey)
}
