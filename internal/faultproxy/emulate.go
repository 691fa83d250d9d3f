package faultproxy

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// --- TableBeingDeleted ---

// deletedTableName returns the table of a Delete Table request, DELETE /Tables('name').
func deletedTableName(r *http.Request) (string, bool) {
	if r.Method != http.MethodDelete {
		return "", false
	}
	seg := lastSegment(r.URL.Path)
	if !strings.HasPrefix(seg, "Tables('") || !strings.HasSuffix(seg, "')") {
		return "", false
	}
	name := seg[len("Tables('") : len(seg)-len("')")]
	return name, isTableName(name)
}

// noteTableDeleted remembers a successful table deletion while the emulation is on.
func (p *Proxy) noteTableDeleted(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleting > 0 {
		p.deletedAt[strings.ToLower(name)] = time.Now()
	}
}

// tableBeingDeletedLocked reports whether r creates a table deleted less than p.deleting
// ago. p.mu is held.
func (p *Proxy) tableBeingDeletedLocked(r *http.Request, body []byte) bool {
	if p.deleting <= 0 || !IsCreateTable(r) {
		return false
	}
	var req struct {
		TableName string `json:"TableName"`
	}
	if json.Unmarshal(body, &req) != nil || req.TableName == "" {
		return false
	}
	key := strings.ToLower(req.TableName)
	at, ok := p.deletedAt[key]
	if !ok {
		return false
	}
	if time.Since(at) >= p.deleting {
		delete(p.deletedAt, key)
		return false
	}
	return true
}

// --- Paging ---
//
// How Azurite 3.37.0 pages (dist/src/table/persistence/LokiTableMetadataStore.js,
// queryTableEntities, adjustQueryResultforTop, encode/decodeContinuationHeader):
//
//   - It sorts the matching entities by (PartitionKey, RowKey), JavaScript string order,
//     and takes min($top, 1000) + 1 of them. If it got the extra one, it drops it from the
//     page and returns its keys as the continuation: x-ms-continuation-NextPartitionKey and
//     -NextRowKey are base64 (standard alphabet, padded) of the UTF-8 keys of the FIRST
//     entity NOT returned. So a token is inclusive: it names where the next page starts.
//   - Given NextPartitionKey=pk and NextRowKey=rk (base64-decoded), it keeps the entities
//     with PartitionKey > pk, or PartitionKey == pk and RowKey >= rk.
//
// So the proxy can make short pages by lowering $top, pass Azurite's own tokens through, and
// craft the token of an empty first page from the keys of the first entity the query
// returns (fetched with $top=1 and no $select, so the keys are present). Real Azure's tokens
// are opaque, which is why the empty page works against Azurite only.

// servePage answers an entity query under EmulatePaging.
func (p *Proxy) servePage(w http.ResponseWriter, r *http.Request, body []byte, pageMax int, emptyFirst bool) {
	params := splitQuery(r.URL.RawQuery)
	if emptyFirst && !params.has("NextPartitionKey") && !params.has("NextRowKey") {
		p.serveEmptyFirstPage(w, r, body, params)
		return
	}
	top, hasTop := params.top()
	if hasTop && top <= pageMax {
		p.forward(w, r, body, r.URL.RawQuery)
		return
	}
	p.forward(w, r, body, params.with("$top", strconv.Itoa(pageMax)).encode())
}

// serveEmptyFirstPage answers the first request of a query with an empty page whose
// continuation points at the first entity the query returns.
func (p *Proxy) serveEmptyFirstPage(w http.ResponseWriter, r *http.Request, body []byte, params queryParams) {
	probe := params.without("$select").with("$top", "1").encode()
	resp, err := p.roundTrip(r, body, probe)
	if err != nil {
		if r.Context().Err() == nil {
			http.Error(w, "faultproxy: "+err.Error(), http.StatusBadGateway)
		}
		return
	}
	respBody, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		dropConnection(w)
		return
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" {
		relay(w, r, resp, respBody)
		return
	}
	var page map[string]json.RawMessage
	var entities []struct {
		PartitionKey *string `json:"PartitionKey"`
		RowKey       *string `json:"RowKey"`
	}
	if json.Unmarshal(respBody, &page) != nil || json.Unmarshal(page["value"], &entities) != nil ||
		len(entities) == 0 || entities[0].PartitionKey == nil || entities[0].RowKey == nil {
		// Nothing matches, or not a page we understand: serve the real query, whose answer
		// is then also its last page.
		p.forward(w, r, body, r.URL.RawQuery)
		return
	}
	page["value"] = json.RawMessage("[]")
	empty, err := json.Marshal(page)
	if err != nil {
		p.forward(w, r, body, r.URL.RawQuery)
		return
	}
	resp.Header.Set("x-ms-continuation-NextPartitionKey", base64.StdEncoding.EncodeToString([]byte(*entities[0].PartitionKey)))
	resp.Header.Set("x-ms-continuation-NextRowKey", base64.StdEncoding.EncodeToString([]byte(*entities[0].RowKey)))
	relay(w, r, resp, empty)
}

// queryParams is a raw query split at '&', kept encoded so that what the proxy does not
// touch reaches the service byte for byte ($filter encodings included).
type queryParams []string

func splitQuery(raw string) queryParams {
	if raw == "" {
		return nil
	}
	return strings.Split(raw, "&")
}

// keyOf returns the decoded name of one "name=value" part.
func keyOf(part string) string {
	k, _, _ := strings.Cut(part, "=")
	if d, err := url.QueryUnescape(k); err == nil {
		return d
	}
	return k
}

func (q queryParams) has(name string) bool {
	for _, part := range q {
		if keyOf(part) == name {
			return true
		}
	}
	return false
}

// top returns the value of $top, if present and a number.
func (q queryParams) top() (int, bool) {
	for _, part := range q {
		if keyOf(part) == "$top" {
			_, v, _ := strings.Cut(part, "=")
			n, err := strconv.Atoi(v)
			return n, err == nil
		}
	}
	return 0, false
}

func (q queryParams) without(name string) queryParams {
	var out queryParams
	for _, part := range q {
		if keyOf(part) != name {
			out = append(out, part)
		}
	}
	return out
}

// with replaces any name parameter with name=value (value must need no escaping).
func (q queryParams) with(name, value string) queryParams {
	return append(q.without(name), url.QueryEscape(name)+"="+value)
}

func (q queryParams) encode() string { return strings.Join(q, "&") }
