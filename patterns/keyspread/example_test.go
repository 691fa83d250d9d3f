package keyspread_test

import (
	"fmt"

	"github.com/tablepatterns/tablepatterns/patterns/keyspread"
)

// Sequential order numbers (Tablestore's primary key design guide) spread over 16 buckets, and one hot hour spread by
// each entity's RowKey.
func ExampleBuckets() {
	b, _ := keyspread.NewBuckets(16)
	fmt.Println(b.Key("200001"), b.Key("200002"), b.Key("200003"))
	pk := b.KeyBy("2014073118", "0000123_login")
	bucket, natural, _ := b.Split(pk)
	fmt.Println(pk, bucket, natural)
	// Output:
	// 00_200001 02_200002 10_200003
	// 05_2014073118 5 2014073118
}

// The concatenated partition key of Tablestore's primary key design guide: DeviceID, SellerID and CardID keep their
// order as one string.
func ExampleConcat() {
	c, _ := keyspread.NewConcat(keyspread.Field{Name: "DeviceID", Digits: 6}, keyspread.Field{Name: "SellerID"}, keyspread.Field{Name: "CardID", Digits: 6})
	k1, _ := c.Key(54, "a100", 6777)
	k2, _ := c.Key(54, "a1001", 6777)
	fmt.Println(k1, "<", k2, k1 < k2)
	parts, _ := c.Parse(k2)
	fmt.Println(parts)
	// Output:
	// 000054!a100!006777 < 000054!a1001!006777 true
	// [54 a1001 6777]
}

func ExampleAdviseKeys() {
	rep, _ := keyspread.AdviseKeys([]string{"200001", "200002", "200003", "200004", "200005", "200006"}, nil)
	fmt.Println(rep.Pattern, rep.Buckets)
	// Output:
	// append-only 16
}
