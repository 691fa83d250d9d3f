package largeentity_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
)

func TestBlobText(t *testing.T) {
	t.Parallel()
	var zero largeentity.Blob
	if text, err := zero.MarshalText(); err != nil || len(text) != 0 {
		t.Fatalf("zero Blob marshals to %q, %v", text, err)
	}
	if _, err := largeentity.NewBlob([]byte("x"), "").MarshalText(); err == nil {
		t.Fatal("new content marshalled outside a Store")
	}
	var b largeentity.Blob
	inline := `{"v":1,"size":5,"sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824","type":"text/plain","data":"aGVsbG8="}`
	if err := b.UnmarshalText([]byte(inline)); err != nil {
		t.Fatal(err)
	}
	if !b.Inline() || !b.Loaded() || string(b.Bytes()) != "hello" || b.ContentType() != "text/plain" || b.Size() != 5 {
		t.Fatalf("inline decode: %+v", b)
	}
	again, err := b.MarshalText()
	if err != nil || string(again) != inline {
		t.Fatalf("round trip: %s, %v", again, err)
	}
	ref := `{"v":1,"name":"t/abc/Photo.x","size":123,"sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"}`
	if err := b.UnmarshalText([]byte(ref)); err != nil || b.Name() != "t/abc/Photo.x" || b.Loaded() || b.Inline() {
		t.Fatalf("reference decode: %+v, %v", b, err)
	}
	bad := map[string]string{
		"tampered inline": strings.Replace(inline, "aGVsbG8=", "aGFsbG8=", 1),
		"wrong size":      strings.Replace(inline, `"size":5`, `"size":6`, 1),
		"version":         strings.Replace(ref, `"v":1`, `"v":2`, 1),
		"hash":            strings.Replace(ref, `"sha256":"2c`, `"sha256":"zz`, 1),
		"unknown field":   strings.Replace(ref, `"v":1`, `"v":1,"x":1`, 1),
		"negative size":   strings.Replace(ref, `"size":123`, `"size":-1`, 1),
		"not json":        "photo.jpg",
	}
	for name, text := range bad {
		if err := new(largeentity.Blob).UnmarshalText([]byte(text)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := new(largeentity.Blob).UnmarshalText([]byte(strings.Replace(inline, "aGVsbG8=", "aGFsbG8=", 1))); !errors.Is(err, largeentity.ErrContentMismatch) {
		t.Errorf("tampered inline content: %v, want ErrContentMismatch", err)
	}
}

func FuzzBlobUnmarshalText(f *testing.F) {
	f.Add([]byte(`{"v":1,"size":5,"sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824","data":"aGVsbG8="}`))
	f.Add([]byte(`{"v":1,"name":"a/b","size":1,"sha256":"00"}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, text []byte) {
		var b largeentity.Blob
		if err := b.UnmarshalText(text); err != nil {
			return
		}
		// What decodes re-encodes to something that decodes to the same reference.
		out, err := b.MarshalText()
		if err != nil {
			t.Fatalf("decoded %q but cannot re-encode: %v", text, err)
		}
		var c largeentity.Blob
		if err := c.UnmarshalText(out); err != nil {
			t.Fatalf("re-encoded %q does not decode: %v", out, err)
		}
		if c.Name() != b.Name() || c.Size() != b.Size() || c.SHA256() != b.SHA256() || !bytes.Equal(c.Bytes(), b.Bytes()) {
			t.Fatalf("round trip changed the reference: %q -> %q", text, out)
		}
	})
}
