package tablearchive

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// partitionLoad is a client transport that counts, for every partition of a table whose
// PartitionKeys it is given, the table reads in flight that can touch it (its scans: a
// read of one entity, $top=1, an existence check, is only counted), from the request's
// start to the close of its answer's body, and the $batch requests in flight. The throughput model of package
// faultproxy cannot: it charges a query one request against the account only unless its
// $filter starts with a PartitionKey equality, so a range scan (a shard's, a combine's)
// has no partition in its counts. A read's partitions are those of its $filter's
// PartitionKey range (every partition when it has none), a $batch's those its actions
// name: more than a page touches, never fewer, so a bound that holds here holds in the
// service.
type partitionLoad struct {
	next  *http.Client
	parts []string // the table's PartitionKeys

	mu       sync.Mutex
	inFlight map[string]int
	maxReads map[string]int // reads in flight at once, per partition
	batches  int            // $batch requests in flight
	maxBatch int
	seq      int
	reads    []readEvent // every answered read, in answer order
	shardsIn int         // shard manifests created
	probes   int         // one-entity reads ($top=1)
}

// readEvent is one answered table read: its PartitionKey range and its status.
type readEvent struct {
	seq       int
	low, high string // "" = unbounded
	status    int
}

func newPartitionLoad(parts []string) *partitionLoad {
	return &partitionLoad{next: &http.Client{}, parts: parts, inFlight: map[string]int{}, maxReads: map[string]int{}}
}

// Do implements policy.Transporter.
func (l *partitionLoad) Do(req *http.Request) (*http.Response, error) {
	read, batch := faultproxy.IsListEntities(req), faultproxy.IsBatch(req)
	if !read && !batch {
		resp, err := l.next.Do(req)
		if err == nil && req.Method == http.MethodPut && resp.StatusCode == http.StatusCreated && shardManifestPath.MatchString(req.URL.Path) {
			l.mu.Lock()
			l.shardsIn++
			l.mu.Unlock()
		}
		return resp, err
	}
	var low, high string
	var touched []string
	var probe bool
	l.mu.Lock()
	if read {
		low, high = filterRange(req.URL.Query().Get("$filter"))
		probe = req.URL.Query().Get("$top") == "1"
		for _, p := range l.parts {
			if !probe && (low == "" || p >= low) && (high == "" || p < high) {
				touched = append(touched, p)
				l.inFlight[p]++
				l.maxReads[p] = max(l.maxReads[p], l.inFlight[p])
			}
		}
	} else {
		l.batches++
		l.maxBatch = max(l.maxBatch, l.batches)
	}
	l.mu.Unlock()
	var once sync.Once
	done := func(status int) {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if batch {
				l.batches--
				return
			}
			for _, p := range touched {
				l.inFlight[p]--
			}
			l.seq++
			if probe {
				l.probes++
				return
			}
			l.reads = append(l.reads, readEvent{seq: l.seq, low: low, high: high, status: status})
		})
	}
	resp, err := l.next.Do(req)
	if err != nil {
		done(0)
		return nil, err
	}
	resp.Body = &doneBody{ReadCloser: resp.Body, done: func() { done(resp.StatusCode) }}
	return resp, nil
}

// doneBody calls done when the answer's body is closed.
type doneBody struct {
	io.ReadCloser
	done func()
}

func (b *doneBody) Close() error {
	err := b.ReadCloser.Close()
	b.done()
	return err
}

// stats returns the most scanning reads in flight at once per partition, the most $batch
// requests in flight at once, the answered scanning reads, and the one-entity reads.
func (l *partitionLoad) stats() (maxReads map[string]int, maxBatch int, reads []readEvent, probes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	maxReads = map[string]int{}
	for k, v := range l.maxReads {
		maxReads[k] = v
	}
	return maxReads, l.maxBatch, append([]readEvent(nil), l.reads...), l.probes
}

// shardManifests returns how many shard manifests were created.
func (l *partitionLoad) shardManifests() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.shardsIn
}

var (
	shardManifestPath = regexp.MustCompile(`/shard-[0-9]{4}\.json$`)
	pkLower           = regexp.MustCompile(`PartitionKey (ge|gt|eq) '((?:[^']|'')*)'`)
	pkUpper           = regexp.MustCompile(`PartitionKey (lt|le|eq) '((?:[^']|'')*)'`)
)

// filterRange returns the PartitionKey range [low, high) a $filter bounds ("" unbounded).
// A bound that holds k (le, eq) or not (gt) is moved to k+"\x00", k's successor.
func filterRange(f string) (low, high string) {
	unquote := func(s string) string { return strings.ReplaceAll(s, "''", "'") }
	if m := pkLower.FindStringSubmatch(f); m != nil {
		low = unquote(m[2])
		if m[1] == "gt" {
			low += "\x00"
		}
	}
	if m := pkUpper.FindStringSubmatch(f); m != nil {
		high = unquote(m[2])
		if m[1] != "lt" {
			high += "\x00"
		}
	}
	return low, high
}

// covers reports whether the range [low, high) holds pk.
func (e readEvent) covers(pk string) bool {
	return (e.low == "" || pk >= e.low) && (e.high == "" || pk < e.high)
}

// filterOf returns a request's $filter, unescaped.
func filterOf(r *http.Request) string {
	v, _ := url.ParseQuery(r.URL.RawQuery)
	return v.Get("$filter")
}
