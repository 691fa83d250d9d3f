package repo

import (
	"strings"
	"testing"
)

// A stored history is untrusted: the tracker must not keep more of it than WriteHistory
// ids (and the "?" that marks a cut chain), or forged 64 KiB histories on 8192 entities pin ~512 MiB in every reader.
func TestTrackerKeepsNoMoreThanWriteHistoryOfAForgedHistory(t *testing.T) {
	tr := newTracker(DefaultWriteIDProperty, DefaultWriteHistory)
	id := "AAAAAAAAAAA"
	hist := strings.TrimSuffix(strings.Repeat(id+" ", 5000), " ")
	if !validHistory(hist) {
		t.Fatal("forged history not valid")
	}
	tr.remember("p", "r", "e1", hist)
	h, ok := tr.lookup("p", "r", "e1")
	if ok && historyIDs(h) > DefaultWriteHistory {
		t.Errorf("tracker keeps %d ids (%d bytes) of one forged history; WriteHistory is %d", historyIDs(h), len(h), DefaultWriteHistory)
	}
	// The history written next is bounded anyway.
	w := &writeAction{kind: kindUpdateReplace, pk: "p", rk: "r", ifMatch: "e1"}
	tr.plan(w)
	if n := historyIDs(w.hist); n > DefaultWriteHistory {
		t.Errorf("written history has %d ids", n)
	}
}

// historyIDs counts the write ids of a history, without the "?" of a cut chain.
func historyIDs(h string) int {
	n := 0
	for _, e := range strings.Fields(h) {
		if e != "?" {
			n++
		}
	}
	return n
}

// Malformed histories never validate, never panic.
func TestMalformedHistoriesNeverValidate(t *testing.T) {
	for _, h := range []string{"?", "+", "++AAAAAAAAAAA", "AAAAAAAAAAA ?", "? AAAAAAAAAAA", "AAAAAAAAAAA  AAAAAAAAAAA",
		"AAAAAAAAAA=", "AAAAAAAAAAA\tBBBBBBBBBBB", "AAAAAAAAAAA\"", "AAAAAAAAAAA\u00e9", " AAAAAAAAAAA", "AAAAAAAAAAA ", "AAAAAAAAAAA ? ?"} {
		t.Logf("%q valid=%v", h, validHistory(h))
	}
	for _, h := range []string{"++AAAAAAAAAAA", "AAAAAAAAAAA  AAAAAAAAAAA", "AAAAAAAAAA=", "AAAAAAAAAAA\tBBBBBBBBBBB", "AAAAAAAAAAA\"", " AAAAAAAAAAA", "AAAAAAAAAAA ", "AAAAAAAAAAA ? ?", "? AAAAAAAAAAA"} {
		if validHistory(h) {
			t.Errorf("%q accepted", h)
		}
	}
}
