package app

import "testing"

// -pk-bound takes PartitionKeys that ascend in the service's order (UTF-16 code units,
// where U+FF01 sorts after the surrogates of U+1F600, unlike UTF-8 bytes) and that the
// service accepts as keys; anything else is refused while the flags are parsed.
func TestPKBoundsAscendInTheServicesOrderAndAreKeys(t *testing.T) {
	var b boundList
	for _, v := range []string{"a", "\U0001F600", "\uFF01"} {
		if err := b.Set(v); err != nil {
			t.Fatalf("-pk-bound %q after %q: %v", v, b, err)
		}
	}
	for _, v := range []string{"", "\uFF01", "b", "\uFF02/x", "\uFF03\x01"} {
		if err := b.Set(v); err == nil {
			t.Errorf("-pk-bound %q after %q accepted", v, b)
		}
	}
}
