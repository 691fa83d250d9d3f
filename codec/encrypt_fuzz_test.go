package codec_test

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
)

// FuzzEncryptionMetadata feeds any bytes as the encryption metadata (versions 1 and 2,
// signed and bound or not) of an entity, to the decoder and to both rotations: an error,
// never a panic, and never a successful read of altered metadata.
func FuzzEncryptionMetadata(f *testing.F) {
	kek, err := codec.NewLocalKey("kek-1", make([]byte, 32))
	if err != nil {
		f.Fatal(err)
	}
	next, err := codec.NewLocalKey("kek-2", make([]byte, 32))
	if err != nil {
		f.Fatal(err)
	}
	ring, err := codec.NewKeyring(kek, next)
	if err != nil {
		f.Fatal(err)
	}
	x := &codec.Encryption{Key: kek, Table: "Documents"}
	c, err := codec.For[signedDoc]()
	if err != nil {
		f.Fatal(err)
	}
	sc, err := c.WithEncryption(x)
	if err != nil {
		f.Fatal(err)
	}
	body, err := sc.Encode(newSignedDoc())
	if err != nil {
		f.Fatal(err)
	}
	e, err := codec.DecodeEntity(body)
	if err != nil {
		f.Fatal(err)
	}
	valid := e.Properties[codec.EncryptionMetadataProperty].([]byte)
	f.Add(valid)
	oc, _ := codec.For[oldDoc]()
	ocx, _ := oc.WithEncryption(&codec.Encryption{Key: kek})
	oldBody, _ := ocx.Encode(&oldDoc{PK: "tenant-a", RK: "doc-1", Owner: "alice", Content: "c"})
	oe, _ := codec.DecodeEntity(oldBody)
	f.Add(oe.Properties[codec.EncryptionMetadataProperty].([]byte))
	f.Add([]byte{2, 1, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, meta []byte) {
		fe := cloneEntity(e)
		fe.Properties[codec.EncryptionMetadataProperty] = meta
		b, err := codec.EncodeEntity(fe)
		if err != nil {
			return
		}
		var got signedDoc
		if err := sc.Decode(b, &got); err == nil && string(meta) != string(valid) {
			t.Fatalf("altered metadata %x was accepted", meta)
		}
		rot := &codec.Encryption{Key: next, Resolver: ring, Table: "Documents"}
		_, _ = rot.Rewrap(t.Context(), cloneEntity(fe))
		_, _ = rot.Reencrypt(t.Context(), cloneEntity(fe))
	})
}
