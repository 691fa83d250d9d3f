package faultproxy_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// fill inserts n entities spread over partitions of perPartition, in transactions of 100.
func fill(t *testing.T, tc *aztables.Client, n, perPartition int) {
	t.Helper()
	var batch []aztables.TransactionAction
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if _, err := tc.SubmitTransaction(t.Context(), batch, nil); err != nil {
			t.Fatal(err)
		}
		batch = nil
	}
	for i := range n {
		pk := fmt.Sprintf("p%03d", i/perPartition)
		if len(batch) > 0 && (len(batch) == 100 || i%perPartition == 0) {
			flush()
		}
		batch = append(batch, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: entity(t, pk, fmt.Sprintf("r%05d", i))})
	}
	flush()
}

type pageStats struct {
	pages, emptyWithToken int
	sizes                 []int
	seen                  map[string]int
}

// listAll runs the aztables pager to the end and records what it saw.
func listAll(t *testing.T, tc *aztables.Client, opts *aztables.ListEntitiesOptions) pageStats {
	t.Helper()
	st := pageStats{seen: map[string]int{}}
	pager := tc.NewListEntitiesPager(opts)
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		st.pages++
		st.sizes = append(st.sizes, len(page.Entities))
		if len(page.Entities) == 0 && page.NextPartitionKey != nil && *page.NextPartitionKey != "" {
			st.emptyWithToken++
		}
		if st.pages > 10000 {
			t.Fatal("pager does not end")
		}
		for _, raw := range page.Entities {
			var e struct{ PartitionKey, RowKey string }
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			st.seen[e.PartitionKey+"/"+e.RowKey]++
		}
	}
	return st
}

func assertEachOnce(t *testing.T, st pageStats, n int) {
	t.Helper()
	if len(st.seen) != n {
		t.Errorf("saw %d distinct entities, want %d", len(st.seen), n)
	}
	for k, c := range st.seen {
		if c != 1 {
			t.Errorf("entity %s seen %d times", k, c)
		}
	}
}

func TestEmulatePagingEmptyFirstPage(t *testing.T) {
	t.Parallel()
	const n = 1500
	p, tc, direct := proxiedTable(t)
	fill(t, direct, n, 400)

	plain := listAll(t, direct, nil)
	assertEachOnce(t, plain, n)

	p.EmulatePaging(200, true)
	st := listAll(t, tc, nil)
	assertEachOnce(t, st, n)
	if st.pages <= plain.pages {
		t.Errorf("%d pages through the proxy, %d direct: want more", st.pages, plain.pages)
	}
	if st.sizes[0] != 0 || st.emptyWithToken != 1 {
		t.Errorf("page sizes %v: want an empty first page with a token", st.sizes)
	}
	for i, s := range st.sizes {
		if s > 200 {
			t.Errorf("page %d has %d entities, over 200", i, s)
		}
	}
	if want := 1 + (n+199)/200; st.pages != want {
		t.Errorf("%d pages (%v), want %d", st.pages, st.sizes, want)
	}
}

func TestEmulatePagingWithFilterTopAndSelect(t *testing.T) {
	t.Parallel()
	p, tc, direct := proxiedTable(t)
	fill(t, direct, 300, 100)
	p.EmulatePaging(40, true)

	filter := "PartitionKey ge 'p001'"
	sel := "Value"
	top := int32(25)
	st := listAll(t, tc, &aztables.ListEntitiesOptions{Filter: &filter, Select: &sel, Top: &top})
	// $select leaves out the keys, so count pages and sizes only.
	total := 0
	for i, s := range st.sizes {
		if s > 25 {
			t.Errorf("page %d has %d entities, over $top", i, s)
		}
		total += s
	}
	if total != 200 || st.sizes[0] != 0 {
		t.Errorf("page sizes %v: want an empty first page, then 200 entities in pages of <= 25", st.sizes)
	}

	// Without $select the keys tell that each entity came once and $filter held.
	st = listAll(t, tc, &aztables.ListEntitiesOptions{Filter: &filter})
	assertEachOnce(t, st, 200)
	for k := range st.seen {
		if k < "p001" {
			t.Errorf("entity %s does not match the filter", k)
		}
	}
}

func TestEmulatePagingKeysOutsideASCII(t *testing.T) {
	t.Parallel()
	p, tc, direct := proxiedTable(t)
	keys := [][2]string{{"é'ü", "ß 1"}, {"é'ü", "ß%2"}, {"日本", "+=&"}, {"z", "😀"}}
	for _, k := range keys {
		if _, err := direct.AddEntity(t.Context(), entity(t, k[0], k[1]), nil); err != nil {
			t.Fatal(err)
		}
	}
	p.EmulatePaging(1, true)
	st := listAll(t, tc, nil)
	assertEachOnce(t, st, len(keys))
	if st.pages != 1+len(keys) {
		t.Errorf("page sizes %v", st.sizes)
	}
}

func TestEmulatePagingEmptyTable(t *testing.T) {
	t.Parallel()
	p, tc, _ := proxiedTable(t)
	p.EmulatePaging(10, true)
	st := listAll(t, tc, nil)
	if st.pages != 1 || len(st.seen) != 0 || st.emptyWithToken != 0 {
		t.Errorf("empty table: %d pages %v, %d empty with token", st.pages, st.sizes, st.emptyWithToken)
	}
	p.EmulatePaging(0, false)
	if st := listAll(t, tc, nil); st.pages != 1 {
		t.Errorf("paging off: %d pages", st.pages)
	}
}

func TestEmptyFirstPageTokenResumesDirectly(t *testing.T) {
	t.Parallel()
	p, tc, direct := proxiedTable(t)
	fill(t, direct, 30, 10)
	p.EmulatePaging(5, true)
	pager := tc.NewListEntitiesPager(nil)
	first, err := pager.NextPage(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Entities) != 0 || first.NextPartitionKey == nil {
		t.Fatalf("first page: %d entities, token %v", len(first.Entities), first.NextPartitionKey)
	}
	// The token is Azurite's own format: Azurite accepts it without the proxy.
	st := listAll(t, direct, &aztables.ListEntitiesOptions{NextPartitionKey: first.NextPartitionKey, NextRowKey: first.NextRowKey})
	assertEachOnce(t, st, 30)
}
