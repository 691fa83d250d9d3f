package keys_test

import (
	"fmt"
	"time"

	"github.com/tablepatterns/tablepatterns/codec/keys"
)

func ExamplePad() {
	k, _ := keys.Pad(123, 6)
	fmt.Println(k)
	n, _ := keys.ParsePad(k)
	fmt.Println(n)
	_, err := keys.Pad(1234567, 6)
	fmt.Println(err)
	// Output:
	// 000123
	// 123
	// tablepatterns: invalid input: n: 1234567 does not fit in 6 digits
}

func ExamplePadDesc() {
	v1, _ := keys.PadDesc(1, 4)
	v2, _ := keys.PadDesc(2, 4)
	fmt.Println(v1, v2, v2 < v1)
	// Output: 9998 9997 true
}

// The guide's compound RowKey "empid_000123_2012" (the Azure Table storage design guide), with a range query over
// every review of one employee.
func ExampleNew() {
	reviews := keys.MustNew("_")
	emp, _ := keys.Pad(123, 6)
	rk, _ := reviews.Join("empid", emp, "2012")
	fmt.Println(rk)

	lo, hi, _ := reviews.Range("empid", emp)
	fmt.Printf("RowKey ge '%s' and RowKey lt '%s'\n", lo, hi)

	_, err := reviews.Join("emp_id", emp)
	fmt.Println(err)
	// Output:
	// empid_000123_2012
	// RowKey ge 'empid_000123_' and RowKey lt 'empid_000123`'
	// tablepatterns: invalid input: part 0: contains the separator "_"
}

// Any parts round-trip, and the keys sort as the parts do (the Tablestore key design guide's problem with
// "a100" and "a1001" cannot happen).
func ExampleJoin() {
	a := keys.Join("000054", "a100", "6777")
	b := keys.Join("000054", "a1001", "6777")
	fmt.Println(a, b, a < b)

	k := keys.Join("New York", "dept/sales", "#1")
	fmt.Println(k)
	parts, _ := keys.Split(k)
	fmt.Printf("%q\n", parts)
	// Output:
	// 000054!a100!6777 000054!a1001!6777 true
	// New"20York!dept.2Fsales!"231
	// ["New York" "dept/sales" "#1"]
}

// The log tail pattern (the Azure Table storage design guide): newest first.
func ExampleInvertedTicks() {
	t := time.Date(2012, 1, 1, 0, 0, 0, 0, time.UTC)
	older := keys.InvertedTicks(t)
	newer := keys.InvertedTicks(t.Add(time.Second))
	fmt.Println(older)
	fmt.Println(newer < older)

	back, _ := keys.FromInvertedTicks(older)
	fmt.Println(back)

	// Several entities in the same tick: add something unique.
	fmt.Println(keys.InvertedTicksUnique(t, "expense-42"))
	// Output:
	// 2520769247999999999
	// true
	// 2012-01-01 00:00:00 +0000 UTC
	// 2520769247999999999_expense-42
}

// Sequential order numbers spread over the key space (Tablestore's primary key design guide).
func ExampleHashPrefix() {
	for _, order := range []string{"200001", "200002", "200003"} {
		fmt.Println(keys.HashPrefix(order, 4))
	}
	k, _ := keys.StripHashPrefix("ee8f_200001")
	fmt.Println(k)
	// Output:
	// ee8f_200001
	// 7db8_200002
	// 5c74_200003
	// 200001
}

// A hot partition spread over 16 buckets; a reader queries each bucket.
func ExampleBucketKey() {
	fmt.Println(keys.BucketKey("2024-05-01", 16))
	lo, hi := keys.PrefixRange(keys.BucketPrefix(3, 16))
	fmt.Println(lo, hi)
	// Output:
	// 10_2024-05-01
	// 03_ 03`
}

func ExamplePrefixRange() {
	lo, hi := keys.PrefixRange("email_")
	fmt.Printf("RowKey ge '%s' and RowKey lt '%s'\n", lo, hi)
	// Output: RowKey ge 'email_' and RowKey lt 'email`'
}
