package compoundkey_test

import (
	"fmt"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/patterns/compoundkey"
)

// The guide's review key: the employee id, padded, then the year.
func ExampleLayout() {
	reviews := compoundkey.MustLayout("empid", 2, nil)
	id, _ := keys.Pad(123, 6)
	rk, _ := reviews.Key(id, "2012")
	fmt.Println(rk)
	parts, _ := reviews.Parse(rk)
	fmt.Println(parts)
	lo, hi, _ := reviews.Range(id)
	fmt.Printf("RowKey ge %q and RowKey lt %q\n", lo, hi)
	_, err := reviews.Parse("empid_000123")
	fmt.Println(err != nil)
	// Output:
	// empid_000123_2012
	// [000123 2012]
	// RowKey ge "empid_000123_" and RowKey lt "empid_000123`"
	// true
}
