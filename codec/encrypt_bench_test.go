package codec_test

import (
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
)

// benchSecretEmployee is benchEmployee with its Email encrypted.
type benchSecretEmployee struct {
	Department string `table:",pk"`
	EmployeeNo string `table:",rk"`
	ETag       string `table:",etag"`
	Timestamp  time.Time
	FirstName  string
	LastName   string
	Age        int32
	Email      string `table:"Email,encrypt"`
	HireDate   time.Time
	EmployeeID int64
	Badge      codec.GUID
}

// BenchmarkEncryptedProperty encodes and decodes the guide's employee entity with its Email
// in plaintext ("impl=plain") and encrypted ("impl=encrypted": a fresh content key, AES key
// wrap under a LocalKey, AES-256-GCM of one property and of the metadata, and the reverse
// on decode), in one run so that the ratio is meaningful. The encrypted line reports its
// cost relative to the plain one (x-slower) and the bytes it adds to the entity (+bytes).
func BenchmarkEncryptedProperty(b *testing.B) {
	plain := newBenchEmployee()
	secret := benchSecretEmployee(plain)
	var plainNs float64
	var plainLen int
	b.Run("impl=plain", func(b *testing.B) {
		c, err := codec.For[benchEmployee]()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		var out benchEmployee
		start := mallocs()
		for b.Loop() {
			data, err := c.Encode(&plain)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Decode(data, &out); err != nil {
				b.Fatal(err)
			}
			plainLen = len(data)
		}
		plainNs, _ = perOp(b, start)
	})
	b.Run("impl=encrypted", func(b *testing.B) {
		base, err := codec.For[benchSecretEmployee]()
		if err != nil {
			b.Fatal(err)
		}
		c, err := base.WithEncryption(&codec.Encryption{Key: localKey(b, "kek-bench")})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		var out benchSecretEmployee
		var n int
		start := mallocs()
		for b.Loop() {
			data, err := c.Encode(&secret)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Decode(data, &out); err != nil {
				b.Fatal(err)
			}
			n = len(data)
		}
		ns, _ := perOp(b, start)
		if plainNs > 0 && ns > 0 {
			b.ReportMetric(ns/plainNs, "x-slower")
			b.ReportMetric(float64(n-plainLen), "+bytes")
		}
		if out.Email != plain.Email {
			b.Fatalf("decrypted %q", out.Email)
		}
	})
}
