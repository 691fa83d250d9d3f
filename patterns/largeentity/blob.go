package largeentity

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Blob is a large property of an entity: its content lives in a blob of Blob storage, or
// inline in the entity when it is small (see Options.InlineLimit), and the entity keeps a
// reference to it with its size, SHA-256 and content type.
//
// Declare it as a field of the entity type and let the Store move the content:
//
//	type Employee struct {
//		Department string             `table:",pk"`
//		EmployeeID string             `table:",rk"`
//		Name       string             `table:"Name"`
//		Photo      largeentity.Blob   `table:"Photo,omitempty"`
//		ETag       string             `table:",etag"`
//	}
//
// The zero Blob means "no content": the property is absent (with omitempty) or empty.
// NewBlob holds new content, which the next write through the Store uploads under a fresh
// name. A Blob read by Store.Get holds the stored reference, and its content too when it is
// inline or was loaded (GetOptions.Eager, Store.Load, Store.Open).
//
// The stored form is an Edm.String holding a small JSON document
// ({"v":1,"name":...,"size":...,"sha256":...,"type":...}, with "data" in base64 instead
// of "name" when inline). Blob implements encoding.TextMarshaler for package codec: a Blob
// with new content that was not written through a Store cannot be marshalled, so that a
// plain repo.Table never stores a reference to a blob that does not exist.
//
// A Blob is a small value; copies share the content, which must not be modified after
// NewBlob.
type Blob struct {
	present bool   // there is content (possibly empty)
	name    string // blob name; "" when inline (or not yet placed)
	size    int64
	sum     [sha256.Size]byte
	ctype   string
	data    []byte
	loaded  bool // data holds the content described by the reference
	pending bool // new content, to be stored by the next write through a Store
	placed  bool // pending content has its final place (name or inline) for this write
	// owner is the name prefix (Store prefix, entity directory, property) that a Store
	// checked name against for the entity it read b from, or generated name under: Open
	// streams only a Blob whose name a Store vouched for. "" for a Blob decoded elsewhere.
	owner string
}

// NewBlob returns a Blob holding new content (which may be empty) and its MIME content
// type ("" for application/octet-stream). The next Insert, Update or Upsert of the entity
// through a Store stores it: in a new blob, or inline when it is small. data must not be
// modified afterwards.
func NewBlob(data []byte, contentType string) Blob {
	if data == nil {
		data = []byte{}
	}
	return Blob{present: true, size: int64(len(data)), sum: sha256.Sum256(data), ctype: contentType, data: data, loaded: true, pending: true}
}

// IsZero reports whether b holds no content at all (the property is absent).
func (b Blob) IsZero() bool { return !b.present }

// Size returns the content's length in bytes.
func (b Blob) Size() int64 { return b.size }

// SHA256 returns the content's SHA-256 in lowercase hex, "" for the zero Blob.
func (b Blob) SHA256() string {
	if !b.present {
		return ""
	}
	return hex.EncodeToString(b.sum[:])
}

// ContentType returns the content's MIME type as given to NewBlob.
func (b Blob) ContentType() string { return b.ctype }

// Name returns the name of the blob holding the content in the Store's container, or ""
// when the content is inline, new (not written yet) or absent.
func (b Blob) Name() string {
	if b.pending {
		return ""
	}
	return b.name
}

// Inline reports whether the stored content lives inside the entity rather than in a blob.
func (b Blob) Inline() bool { return b.present && !b.pending && b.name == "" }

// Loaded reports whether the content is in memory (Bytes returns it).
func (b Blob) Loaded() bool { return b.present && b.loaded }

// Pending reports whether b holds new content that has not been written through a Store.
func (b Blob) Pending() bool { return b.pending }

// Bytes returns the content if it is in memory (see Loaded), else nil. The slice is shared:
// do not modify it.
func (b Blob) Bytes() []byte {
	if !b.loaded {
		return nil
	}
	return b.data
}

// stored is the JSON document of a stored reference.
type stored struct {
	V      int    `json:"v"`
	Name   string `json:"name,omitempty"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Type   string `json:"type,omitempty"`
	Data   []byte `json:"data,omitempty"`
}

// errUnstored is what MarshalText reports for new content written outside a Store.
var errUnstored = errors.New("the Blob holds new content that was not written through a largeentity.Store (a plain table write would store a reference to a blob that does not exist)")

// MarshalText implements encoding.TextMarshaler: the stored form described on Blob.
// The zero Blob marshals to "" (absent with omitempty). It fails for new content that is
// not being written through a Store.
func (b Blob) MarshalText() ([]byte, error) {
	if !b.present {
		return []byte{}, nil
	}
	if b.pending && !b.placed {
		return nil, errUnstored
	}
	d := stored{V: 1, Name: b.name, Size: b.size, SHA256: hex.EncodeToString(b.sum[:]), Type: b.ctype}
	if b.name == "" {
		if !b.loaded {
			return nil, errors.New("inline Blob without its content")
		}
		d.Data = b.data
		if d.Data == nil {
			d.Data = []byte{}
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalText implements encoding.TextUnmarshaler. "" gives the zero Blob. Inline content
// is checked against the stored size and SHA-256; a mismatch is an error wrapping
// ErrContentMismatch.
func (b *Blob) UnmarshalText(text []byte) error {
	*b = Blob{}
	if len(text) == 0 {
		return nil
	}
	var d stored
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return fmt.Errorf("largeentity: malformed Blob reference: %w", err)
	}
	if d.V != 1 {
		return fmt.Errorf("largeentity: Blob reference version %d is not supported", d.V)
	}
	sum, err := hex.DecodeString(d.SHA256)
	if err != nil || len(sum) != sha256.Size {
		return fmt.Errorf("largeentity: malformed SHA-256 %q in Blob reference", d.SHA256)
	}
	if d.Size < 0 {
		return fmt.Errorf("largeentity: negative size %d in Blob reference", d.Size)
	}
	b.present, b.name, b.size, b.ctype = true, d.Name, d.Size, d.Type
	copy(b.sum[:], sum)
	if d.Name == "" {
		if d.Data == nil {
			d.Data = []byte{}
		}
		if err := verify(d.Data, b.size, b.sum); err != nil {
			return err
		}
		b.data, b.loaded = d.Data, true
	} else if strings.ContainsAny(d.Name, "\\?#") {
		return fmt.Errorf("largeentity: malformed blob name %q in Blob reference", d.Name)
	}
	return nil
}

// verify checks content against a reference's size and hash.
func verify(data []byte, size int64, sum [sha256.Size]byte) error {
	if int64(len(data)) != size {
		return fmt.Errorf("%w: %d bytes, the entity says %d", ErrContentMismatch, len(data), size)
	}
	if sha256.Sum256(data) != sum {
		return fmt.Errorf("%w: SHA-256 differs from the entity's", ErrContentMismatch)
	}
	return nil
}

// maxInlineLimit is the largest InlineLimit: the base64 of this many bytes plus the JSON
// around it stays under the 64 KiB (32 K UTF-16 code units) of an Edm.String.
const maxInlineLimit = 24000
