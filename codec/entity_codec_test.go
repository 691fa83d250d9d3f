package codec_test

import (
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
)

// Entity works as the type of a codec, so a repo.Table can hold dynamic entities (wide
// entities, archivers) with their EDM types kept.
func TestEntityIsACodecType(t *testing.T) {
	c, err := codec.For[codec.Entity]()
	if err != nil {
		t.Fatal(err)
	}
	when := time.Date(2024, 5, 6, 7, 8, 9, 100, time.UTC)
	in := codec.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{
		"I64": int64(1) << 40, "I32": int32(7), "S": "x", "D": 1.5, "T": when, "B": []byte{1, 2}, "G": codec.GUID{1},
	}}
	b, err := c.Encode(&in)
	if err != nil {
		t.Fatal(err)
	}
	var out codec.Entity
	if err := c.Decode(b, &out); err != nil {
		t.Fatal(err)
	}
	if pk, rk := c.Keys(&out); pk != "p" || rk != "r" {
		t.Fatalf("keys %q %q", pk, rk)
	}
	for k, v := range in.Properties {
		got := out.Properties[k]
		switch want := v.(type) {
		case time.Time:
			if g, ok := got.(time.Time); !ok || !g.Equal(want) {
				t.Errorf("%s: %v, want %v", k, got, want)
			}
		case []byte:
			if g, ok := got.([]byte); !ok || string(g) != string(want) {
				t.Errorf("%s: %v, want %v", k, got, want)
			}
		default:
			if got != v {
				t.Errorf("%s: %#v, want %#v", k, got, v)
			}
		}
	}
}
