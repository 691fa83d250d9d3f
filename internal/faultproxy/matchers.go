package faultproxy

import (
	"net/http"
	"strings"
)

// The matchers below are for Rule.Match. Paths are matched on their last segment, so they
// work for path-style (Azurite: /devstoreaccount1/...) and host-style (Azure) endpoints.
// Each group assumes the proxy fronts that service: on a Table proxy, an insert into a
// table named "messages" looks like an enqueue.

// MethodIs matches requests with any of the given HTTP methods.
func MethodIs(methods ...string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		for _, m := range methods {
			if r.Method == m {
				return true
			}
		}
		return false
	}
}

// PathContains matches requests whose decoded path contains s.
func PathContains(s string) func(*http.Request) bool {
	return func(r *http.Request) bool { return strings.Contains(r.URL.Path, s) }
}

// QueryContains matches requests whose raw (encoded) query contains s.
func QueryContains(s string) func(*http.Request) bool {
	return func(r *http.Request) bool { return strings.Contains(r.URL.RawQuery, s) }
}

// HeaderIs matches requests whose header name has exactly the value value.
func HeaderIs(name, value string) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.Header.Get(name) == value }
}

// All matches requests that every m matches (and every request when there is none).
func All(ms ...func(*http.Request) bool) func(*http.Request) bool {
	return func(r *http.Request) bool {
		for _, m := range ms {
			if !m(r) {
				return false
			}
		}
		return true
	}
}

// Any matches requests that at least one m matches.
func Any(ms ...func(*http.Request) bool) func(*http.Request) bool {
	return func(r *http.Request) bool {
		for _, m := range ms {
			if m(r) {
				return true
			}
		}
		return false
	}
}

// Not matches the requests m does not.
func Not(m func(*http.Request) bool) func(*http.Request) bool {
	return func(r *http.Request) bool { return !m(r) }
}

// --- Table service ---

// IsTableQuery matches reads of entities: GET /<table>() (a query) and
// GET /<table>(PartitionKey='..',RowKey='..') (a point read).
func IsTableQuery(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	name, args, ok := entityResource(r.URL.Path)
	return ok && name != "" && (args == "" || strings.HasPrefix(args, "PartitionKey="))
}

// IsListEntities matches entity queries only: GET /<table>(), as the aztables list pager
// sends them.
func IsListEntities(r *http.Request) bool { return isListEntities(r) }

func isListEntities(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	_, args, ok := entityResource(r.URL.Path)
	return ok && args == ""
}

// IsGetEntity matches point reads: GET /<table>(PartitionKey='..',RowKey='..').
func IsGetEntity(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	_, args, ok := entityResource(r.URL.Path)
	return ok && args != ""
}

// IsEntityWrite matches single-entity writes: insert (POST /<table>), update and upsert
// (PUT, PATCH or MERGE on /<table>(PartitionKey=..,RowKey=..)) and delete (DELETE on it).
// Entity group transactions are IsBatch.
func IsEntityWrite(r *http.Request) bool {
	seg := lastSegment(r.URL.Path)
	switch r.Method {
	case http.MethodPost:
		return isTableName(seg) && !strings.EqualFold(seg, "Tables")
	case http.MethodPut, http.MethodPatch, "MERGE", http.MethodDelete:
		_, args, ok := entityResource(r.URL.Path)
		return ok && args != ""
	}
	return false
}

// IsInsertEntity matches inserts: POST /<table>.
func IsInsertEntity(r *http.Request) bool {
	return r.Method == http.MethodPost && IsEntityWrite(r)
}

// IsBatch matches entity group transactions: POST .../$batch.
func IsBatch(r *http.Request) bool {
	return r.Method == http.MethodPost && lastSegment(r.URL.Path) == "$batch"
}

// IsCreateTable matches table creation: POST /Tables.
func IsCreateTable(r *http.Request) bool {
	return r.Method == http.MethodPost && lastSegment(r.URL.Path) == "Tables"
}

// IsDeleteTable matches table deletion: DELETE /Tables('name').
func IsDeleteTable(r *http.Request) bool {
	_, ok := deletedTableName(r)
	return ok
}

// --- Queue service ---

// IsEnqueue matches Put Message: POST .../<queue>/messages.
func IsEnqueue(r *http.Request) bool {
	return r.Method == http.MethodPost && lastSegment(r.URL.Path) == "messages"
}

// IsDequeue matches Get Messages (not Peek): GET .../<queue>/messages without peekonly=true.
func IsDequeue(r *http.Request) bool {
	return r.Method == http.MethodGet && lastSegment(r.URL.Path) == "messages" &&
		!strings.EqualFold(r.URL.Query().Get("peekonly"), "true")
}

// IsDeleteMessage matches Delete Message: DELETE .../messages/<id>?popreceipt=...
func IsDeleteMessage(r *http.Request) bool {
	return r.Method == http.MethodDelete && isMessageResource(r)
}

// IsUpdateMessage matches Update Message: PUT .../messages/<id>?popreceipt=...
func IsUpdateMessage(r *http.Request) bool {
	return r.Method == http.MethodPut && isMessageResource(r)
}

func isMessageResource(r *http.Request) bool {
	path := strings.TrimSuffix(r.URL.Path, "/")
	i := strings.LastIndexByte(path, '/')
	return i > 0 && lastSegment(path[:i]) == "messages" && r.URL.Query().Has("popreceipt")
}

// --- Blob service ---

// IsPutBlob matches blob uploads in one request: PUT with an x-ms-blob-type header.
func IsPutBlob(r *http.Request) bool {
	return r.Method == http.MethodPut && r.Header.Get("x-ms-blob-type") != ""
}

// --- path helpers ---

// lastSegment returns the part of path after its last slash.
func lastSegment(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}

// entityResource splits a last segment like "mytable()" or
// "mytable(PartitionKey='a',RowKey='b')" into the table name and what is between the
// parentheses. The Tables resource is not an entity resource.
func entityResource(path string) (table, args string, ok bool) {
	seg := lastSegment(path)
	open := strings.IndexByte(seg, '(')
	if open <= 0 || !strings.HasSuffix(seg, ")") {
		return "", "", false
	}
	table = seg[:open]
	if !isTableName(table) || strings.EqualFold(table, "Tables") {
		return "", "", false
	}
	return table, seg[open+1 : len(seg)-1], true
}

// isTableName reports whether s has the characters of a table name (length is not checked:
// the service does that).
func isTableName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range []byte(s) {
		isLetter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !isLetter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}
