package largeentity_test

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
)

// FuzzBlobReference feeds any text as a stored reference: an error or a Blob, never a
// panic; an accepted reference marshals back to a reference that reads the same.
func FuzzBlobReference(f *testing.F) {
	for _, seed := range []string{
		`{"v":1,"name":"T/0e2d/Photo.20261123T223620Z.4483df3624dab19e6fd0836f","size":40960,"sha256":"` + sha([]byte("x")) + `","type":"image/jpeg"}`,
		`{"v":1,"size":1,"sha256":"` + sha([]byte("x")) + `","data":"eA=="}`,
		`{"v":1,"name":"other-app/config.json","size":1125899906842624,"sha256":"` + sha(nil) + `"}`,
		`{"v":1,"size":-1}`, `{"v":2}`, `{`, ``, `null`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var b largeentity.Blob
		if err := b.UnmarshalText([]byte(text)); err != nil {
			return
		}
		out, err := b.MarshalText()
		if err != nil {
			t.Fatalf("accepted %q but cannot marshal it: %v", text, err)
		}
		var again largeentity.Blob
		if err := again.UnmarshalText(out); err != nil || again.Name() != b.Name() || again.Size() != b.Size() || again.SHA256() != b.SHA256() {
			t.Fatalf("%q -> %q -> %+v, %v", text, out, again, err)
		}
	})
}
