package codec_test

import (
	"crypto/rand"
	"fmt"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec"
)

// The guide's employee with an encrypted SSN: what is stored, and what is read back.
func ExampleCodec_WithEncryption() {
	type Employee struct {
		Department string `table:",pk"`
		EmployeeID string `table:",rk"`
		Name       string
		SSN        string `table:"SSN,encrypt"`
	}
	kekBytes := make([]byte, 32) // in real life: from a secret store or a key vault
	_, _ = rand.Read(kekBytes)
	kek, _ := codec.NewLocalKey("kek-2024", kekBytes)

	c, _ := codec.For[Employee]()
	ec, _ := c.WithEncryption(&codec.Encryption{Key: kek})
	body, _ := ec.Encode(&Employee{Department: "Sales", EmployeeID: "000123", Name: "Don Hall", SSN: "078-05-1120"})
	fmt.Println("SSN stored as binary:", strings.Contains(string(body), `"SSN@odata.type":"Edm.Binary"`))
	fmt.Println("plaintext stored:", strings.Contains(string(body), "078-05-1120"))

	var e Employee
	_ = ec.Decode(body, &e)
	fmt.Println(e.Name, e.SSN)

	stored, _ := codec.DecodeEntity(body)
	id, _ := stored.EncryptionKeyID()
	fmt.Println("key id:", id)
	// Output:
	// SSN stored as binary: true
	// plaintext stored: false
	// Don Hall 078-05-1120
	// key id: kek-2024
}

// A blind index makes an encrypted email findable by exact match: store Sum(email) as a
// key or a property, and look up Sum of the address searched for.
func ExampleBlindIndex() {
	key := make([]byte, 32) // a secret of its own, apart from the encryption keys
	_, _ = rand.Read(key)
	ix, _ := codec.NewBlindIndex("Email", key, nil)

	stored := "email_" + ix.Sum("jonesj@contoso.com")
	typed := "email_" + ix.Sum("  JonesJ@Contoso.com ")
	fmt.Println("same index value:", stored == typed, len(ix.Sum("x")), "hex digits")
	fmt.Println("valid RowKey:", codec.ValidateKey("RowKey", stored) == nil)
	// Output:
	// same index value: true 32 hex digits
	// valid RowKey: true
}
