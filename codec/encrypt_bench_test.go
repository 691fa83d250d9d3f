package codec_test

import (
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
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
// in plaintext ("plain") and encrypted ("encrypted": a fresh content key, AES key wrap under
// a LocalKey, AES-256-GCM of one property and of the metadata, and the reverse on decode),
// alternated in batches of 16 in one run (benchcmp). Here ours is the plain side, so ratio
// is how many times slower encryption is; +bytes is what it adds to the stored entity.
func BenchmarkEncryptedProperty(b *testing.B) {
	plain := newBenchEmployee()
	secret := benchSecretEmployee(plain)
	pc, err := codec.For[benchEmployee]()
	if err != nil {
		b.Fatal(err)
	}
	base, err := codec.For[benchSecretEmployee]()
	if err != nil {
		b.Fatal(err)
	}
	ec, err := base.WithEncryption(&codec.Encryption{Key: localKey(b, "kek-bench")})
	if err != nil {
		b.Fatal(err)
	}
	var plainOut benchEmployee
	var secretOut benchSecretEmployee
	var plainLen, secretLen int
	benchcmp.Run(b, &benchcmp.Options{Batch: 16, Allocs: true},
		benchcmp.Side{Name: "plain", Op: func(int) error {
			data, err := pc.Encode(&plain)
			if err != nil {
				return err
			}
			plainLen = len(data)
			return pc.Decode(data, &plainOut)
		}},
		benchcmp.Side{Name: "encrypted", Op: func(int) error {
			data, err := ec.Encode(&secret)
			if err != nil {
				return err
			}
			secretLen = len(data)
			if err := ec.Decode(data, &secretOut); err != nil {
				return err
			}
			return benchcmp.Check("decrypted Email", secretOut.Email, plain.Email)
		}})
	b.ReportMetric(float64(secretLen-plainLen), "+bytes")
}
