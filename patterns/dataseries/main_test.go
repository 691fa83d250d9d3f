package dataseries_test

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/dataseries"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func setup(t testing.TB, proxied bool) *testbed.Bed {
	t.Helper()
	return testbed.New(t, &testbed.Options{Proxied: proxied})
}

// table returns the bed's table of dynamic entities with TrackWrites (what New requires)
// and fast retries; topts may set anything else.
func table(b *testbed.Bed, topts *repo.Options) *repo.Table[codec.Entity] {
	b.T.Helper()
	o := repo.Options{}
	if topts != nil {
		o = *topts
	}
	o.TrackWrites = true
	return testbed.NewTable[codec.Entity](b, &o)
}

// hours returns the guide's 24 hourly message counts on the bed's table.
func hours(t testing.TB, b *testbed.Bed, o *dataseries.Options) *dataseries.Store[int64] {
	t.Helper()
	return hoursWith(t, b, nil, o)
}

// hoursWith is hours on a table built with topts.
func hoursWith(t testing.TB, b *testbed.Bed, topts *repo.Options, o *dataseries.Options) *dataseries.Store[int64] {
	t.Helper()
	s, err := dataseries.New[int64](table(b, topts), dataseries.Layout{Points: 24, Prefix: "H"}, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
