package faultproxy

import (
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestMatchers(t *testing.T) {
	t.Parallel()
	const acct = "http://127.0.0.1:1/devstoreaccount1"
	tests := []struct {
		method, url string
		match       func(*http.Request) bool
		want        bool
	}{
		{"GET", acct + "/mytable()", IsTableQuery, true},
		{"GET", acct + "/mytable()?%24filter=x", IsListEntities, true},
		{"GET", acct + "/mytable(PartitionKey='a',RowKey='b')", IsTableQuery, true},
		{"GET", acct + "/mytable(PartitionKey='a',RowKey='b')", IsGetEntity, true},
		{"GET", acct + "/mytable(PartitionKey='a',RowKey='b')", IsListEntities, false},
		{"GET", acct + "/Tables", IsTableQuery, false},
		{"GET", acct + "/Tables('mytable')", IsTableQuery, false},
		{"POST", acct + "/mytable()", IsTableQuery, false},
		{"GET", "http://acct.table.core.windows.net/mytable()", IsListEntities, true},
		{"POST", acct + "/$batch", IsBatch, true},
		{"POST", acct + "/mytable", IsBatch, false},
		{"POST", acct + "/mytable", IsInsertEntity, true},
		{"POST", acct + "/mytable", IsEntityWrite, true},
		{"POST", acct + "/Tables", IsInsertEntity, false},
		{"POST", acct + "/$batch", IsEntityWrite, false},
		{"PUT", acct + "/mytable(PartitionKey='a',RowKey='b')", IsEntityWrite, true},
		{"MERGE", acct + "/mytable(PartitionKey='a',RowKey='b')", IsEntityWrite, true},
		{"DELETE", acct + "/mytable(PartitionKey='a',RowKey='b')", IsEntityWrite, true},
		{"DELETE", acct + "/Tables('mytable')", IsEntityWrite, false},
		{"DELETE", acct + "/Tables('mytable')", IsDeleteTable, true},
		{"POST", acct + "/Tables", IsCreateTable, true},
		{"POST", acct + "/q1/messages", IsEnqueue, true},
		{"GET", acct + "/q1/messages?numofmessages=5", IsDequeue, true},
		{"GET", acct + "/q1/messages?peekonly=true", IsDequeue, false},
		{"DELETE", acct + "/q1/messages/abc?popreceipt=x", IsDeleteMessage, true},
		{"DELETE", acct + "/q1/messages", IsDeleteMessage, false},
		{"PUT", acct + "/q1/messages/abc?popreceipt=x&visibilitytimeout=0", IsUpdateMessage, true},
		{"GET", acct + "/mytable()", MethodIs("PUT", "GET"), true},
		{"GET", acct + "/mytable()", PathContains("mytable"), true},
		{"GET", acct + "/mytable()?%24top=5", QueryContains("%24top"), true},
		{"GET", acct + "/mytable()", All(IsTableQuery, Not(IsGetEntity)), true},
		{"GET", acct + "/mytable()", Any(IsBatch, IsEnqueue), false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, tt.url, nil)
		if got := tt.match(r); got != tt.want {
			t.Errorf("%s %s: got %v, want %v", tt.method, tt.url, got, tt.want)
		}
	}
}

func TestWriteErrorBodies(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("POST", "http://127.0.0.1:1/devstoreaccount1/t", nil)
	r.Header.Set("DataServiceVersion", "3.0")
	w := httptest.NewRecorder()
	writeError(w, r, 503, "ServerBusy")
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message struct{ Lang, Value string }
		} `json:"odata.error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err, w.Body.String())
	}
	if w.Code != 503 || w.Header().Get("x-ms-error-code") != "ServerBusy" || body.Error.Code != "ServerBusy" || body.Error.Message.Lang != "en-US" || body.Error.Message.Value == "" {
		t.Fatalf("table error: %d %v %s", w.Code, w.Header(), w.Body)
	}

	r = httptest.NewRequest("PUT", "http://127.0.0.1:1/devstoreaccount1/c/b", nil)
	r.Header.Set("Accept", "application/xml")
	w = httptest.NewRecorder()
	writeError(w, r, 500, "InternalError")
	var x struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	if err := xml.Unmarshal(w.Body.Bytes(), &x); err != nil || x.Code != "InternalError" || x.Message == "" {
		t.Fatalf("xml error: %v %s", err, w.Body)
	}

	r = httptest.NewRequest("HEAD", "http://127.0.0.1:1/devstoreaccount1/c/b", nil)
	w = httptest.NewRecorder()
	writeError(w, r, 404, "BlobNotFound")
	if w.Body.Len() != 0 || w.Header().Get("x-ms-error-code") != "BlobNotFound" {
		t.Fatalf("HEAD error: %s", w.Body)
	}
}

func TestQueryParams(t *testing.T) {
	t.Parallel()
	raw := "%24filter=PartitionKey%20eq%20%27a%2Bb%27&%24top=1000&NextPartitionKey=cA%3D%3D"
	q := splitQuery(raw)
	if !q.has("NextPartitionKey") || q.has("NextRowKey") {
		t.Fatal("has")
	}
	if n, ok := q.top(); !ok || n != 1000 {
		t.Fatalf("top = %d %v", n, ok)
	}
	got := q.with("$top", "200").encode()
	want := "%24filter=PartitionKey%20eq%20%27a%2Bb%27&NextPartitionKey=cA%3D%3D&%24top=200"
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

func TestNewRejectsBadTargets(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"", "127.0.0.1:10002", "ftp://x", "http://127.0.0.1:1/devstoreaccount1", "http://h?x=1"} {
		if p, err := New(target); err == nil {
			_ = p.Close()
			t.Errorf("New(%q) accepted", target)
		}
	}
}
