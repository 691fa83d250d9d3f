// Package codec maps Go structs to Azure Table storage entities and back, in the JSON
// format of the Table service (the body of insert, update, merge and upsert; what
// GetEntity and ListEntities return), and checks every service limit before a request is
// sent.
//
// It is the typed layer over aztables, which takes and returns entities as JSON bytes.
// It does not use aztables.EDMEntity: that type doubles single quotes in keys, does not
// convert times to UTC and loses Int64 annotations. The JSON is written by appending to a
// []byte with per-field encoders and pre-escaped property names, and read by a small
// scanner dispatching on a precomputed name-to-field map; the plan of a type is built once
// by reflection and cached.
//
// # Use
//
//	c, err := codec.For[Employee]()    // once; fails if Employee cannot be mapped
//	body, err := c.Encode(&e)          // for AddEntity / UpdateEntity / UpsertEntity
//	err = c.Decode(resp.Value, &e)     // from GetEntity or a ListEntities page
//
// Entity is the dynamic form (a property bag) with EncodeEntity and DecodeEntity; Registry
// decodes several entity types stored in one table (the Azure Table storage design guide, "work with heterogeneous
// entity types").
//
// # Tags
//
// The tag key is "table", with the grammar of encoding/json:
//
//	table:"Name,opt,opt"    store the field as property Name (default: the Go field name)
//	table:"-"               never store the field
//
// Options:
//
//	pk          the PartitionKey field (string or a named string type)
//	rk          the RowKey field (string or a named string type)
//	etag        the ETag field (string): set from "odata.etag" by Decode, never written
//	timestamp   the Timestamp field (time.Time): set by Decode, never written
//	omitempty   leave the property out when the value is zero (or empty)
//	json        store any value (struct, slice, map, ...) JSON-encoded in an Edm.String
//	extra       a map[string]any field that captures, on Decode, the properties no field
//	            maps (typed as DecodeEntity types them) and writes them back on Encode, so
//	            that a Replace does not drop properties another application wrote
//	encrypt     store the property encrypted, as Edm.Binary (see "Encryption" below); any
//	            property type, never the keys, Timestamp, ETag or the extra map
//	sign        store the property in plaintext, authenticated with the encrypted ones
//	            (see "Signed plaintext" below); needs an encrypted field in the type
//
// Without tags, fields named PartitionKey and RowKey (string), ETag (string) and
// Timestamp (time.Time) are recognised by name. Unexported fields are ignored. Embedded
// structs (and pointers to exported structs) without a tag name are flattened as
// encoding/json does; a nil embedded pointer means its properties are absent, and Decode
// allocates it. Two fields with one property name, or one Go field name, are a schema
// error (For fails) rather than silently shadowing each other.
//
// # Type mapping
//
//	string                          Edm.String
//	bool                            Edm.Boolean
//	int8, int16, int32, uint8, uint16   Edm.Int32 (a JSON number)
//	int, int64, uint32              Edm.Int64 (a JSON string, annotated)
//	float32, float64                Edm.Double (annotated always, so that whole numbers stay
//	                                doubles; NaN and ±Inf as "NaN", "Infinity", "-Infinity")
//	time.Time                       Edm.DateTime (UTC, 7 fractional digits: 100 ns ticks)
//	[]byte                          Edm.Binary (base64); a nil slice is absent
//	GUID                            Edm.Guid
//	encoding.TextMarshaler          Edm.String (the type's pointer must also implement
//	                                encoding.TextUnmarshaler); GUID and time.Time excepted
//	*T of any of these              optional: a nil pointer is absent (the service stores
//	                                no nulls) and an absent property decodes to nil
//
// Named types of these kinds map like their underlying type. uint, uint64 and uintptr are
// refused (they do not fit Edm.Int64), as are chan, func, complex, unsafe.Pointer,
// interfaces, and structs, maps, arrays and non-byte slices without the json option.
//
// The zero time.Time (year 1) is outside the Edm.DateTime range: it is left out with
// omitempty, and refused otherwise (use omitempty or *time.Time for "no time"). Times are
// converted to UTC; nanoseconds below 100 ns are truncated.
//
// Decode reads by the destination field's type and accepts what the other official SDKs
// and the service write: Int64 as an annotated string or a bare number; Int32 as a number
// (a whole number written with a fraction, "34.0", too); Double as a number, as "NaN",
// "Infinity", "-Infinity", or as a bare whole number without annotation (the JavaScript
// SDK); DateTime with 0 to 7 (up to 9) fractional digits, "Z", an offset or no zone, with
// or without annotation; Binary in base64 padded or not; Guid in either case, with or
// without braces. A value that does not fit its field (200 into an int8, a fraction into an
// int) is a *DecodeError naming the field. A null is treated as absent.
//
// # Limits
//
// Encode, EncodeProperties, EncodeEntity and Registry.Encode check, and refuse with an
// *InvalidInputError (errors.Is ErrInvalidInput) naming the type, the field, the size and
// the limit:
//
//   - PartitionKey and RowKey: valid UTF-8, at most MaxKeyBytes (1 KiB) measured in UTF-16
//     bytes, as the service stores strings — so at most 512 characters of the BMP. The
//     service documents "1 KiB" without a unit; measuring UTF-16 is the conservative
//     reading: every key accepted here is accepted by the service. No / \ # ?, no
//     U+0000–U+001F, no U+007F–U+009F. The empty string is a valid key.
//   - Property names: a letter or '_' first, then letters, digits, '_' (C# identifiers),
//     at most 255 UTF-16 code units; PartitionKey, RowKey and Timestamp are reserved.
//   - At most MaxProperties (252) custom properties present in the entity.
//   - Edm.String: valid UTF-8, at most 64 KiB of UTF-16 (2 bytes per code unit, 4 for a
//     character outside the BMP) — about 32 K characters. Edm.Binary: at most 64 KiB.
//   - Edm.DateTime: 1601-01-01T00:00:00Z to 9999-12-31T23:59:59.9999999Z.
//   - Entity size: at most MaxEntityBytes (1 MiB), measured with the service's published
//     formula: 4 + 2 × len16(PartitionKey + RowKey) + Σ over properties of (8 + 2 ×
//     len16(name) + value size), where the value size is 2 × len16 + 4 for a string, n + 4
//     for binary, 1 for a boolean, 4 for Int32, 8 for Int64, Double and DateTime, 16 for
//     a Guid. This measures the stored entity, not the JSON body (whose escaping and base64
//     make it larger).
//
// ValidateKey, ValidateTableName and ValidatePropertyName expose the same checks for
// requests that carry no entity (get, delete, create table).
//
// # Encryption
//
// The Azure Table storage design guide ("Encrypting table data") describes client-side encryption in the .NET storage
// library: chosen properties are encrypted before they leave the client, stored as binary
// properties, decrypted on read; merges are not supported. The Azure SDKs of today dropped
// it. This package implements it for struct fields tagged "encrypt":
//
//	type Employee struct {
//		Department string `table:",pk"`
//		EmployeeID string `table:",rk"`
//		Name       string
//		SSN        string    `table:"SSN,encrypt"`
//		Salary     int64     `table:",encrypt"`
//	}
//	c, _ := codec.For[Employee]()
//	ec, err := c.WithEncryption(&codec.Encryption{Key: kek, Resolver: keyring})
//
// Envelope encryption: every Encode draws a fresh random 256-bit content key for the
// entity, encrypts each tagged property with AES-256-GCM under it (a random 96-bit nonce
// per property), and wraps the content key with a KeyEncryptionKey (LocalKey: AES Key
// Wrap, RFC 3394; or a key in a vault behind the interface). The key id is stored, so that
// a KeyResolver finds the right key after rotations.
//
// Rotation: re-wrap or re-encrypt. Encryption.Rewrap (and repo.Table.RotateKeys for a
// whole table) re-wraps each entity's content key under a new key-encryption key and
// leaves the ciphertexts as they are: cheap (the metadata only), and right for routine
// rotation, retiring a key that is no longer trusted to stay available, or moving to
// another vault. It does not help after a key compromise: whoever holds the old key and
// any earlier copy of an entity's metadata (a backup, an export, an earlier read) still
// unwraps the old content key, which still decrypts the current ciphertexts.
// Encryption.Reencrypt (RotateKeys with RotateOptions.Reencrypt) draws a fresh content key
// per entity and writes new ciphertexts: after it, the old key decrypts nothing current.
// Re-encrypt when a key may be compromised, to a new key id that no entity carries yet;
// it costs a full read and a write of every encrypted property. Neither reaches copies
// made before the rotation (backups, archives): those stay readable with the old key.
//
// Key ids read from storage are untrusted input: anyone who can write an entity chooses
// the id its metadata names. A KeyResolver must therefore resolve ids against an
// allowlist of keys it already holds (as Keyring does: a fixed map, an unknown id is
// ErrUnknownKey) and never derive a location from the id: no vault client, URL, file path
// or key version built from a stored id, which would let a writer point the reader at a
// vault of his choosing (and at its credentials or network) or make it fetch keys at will.
// Keep ids as short opaque names, map them to keys in configuration, and cache resolved
// keys.
//
// Stored layout, version 1. Each encrypted property is an Edm.Binary value:
//
//	byte 0        format version (1)
//	bytes 1-12    nonce
//	bytes 13-     AES-256-GCM ciphertext of the property's JSON value (what Encode would
//	              have written for it in plaintext, e.g. "123-45-6789" with its quotes),
//	              followed by the 16-byte tag
//
// and every entity of a type with encrypted fields carries EncryptionMetadataProperty
// ("_EncryptionMetadata"), an Edm.Binary value:
//
//	byte 0        format version (1)
//	byte 1        content cipher (1 = AES-256-GCM, 12-byte nonce, 16-byte tag)
//	byte 2        key id length k (1-255), then k bytes of key id (UTF-8)
//	1 byte        wrapping algorithm length a (1-255), then a bytes (e.g. "A256KW")
//	2 bytes       wrapped content key length w (big endian), then w bytes
//	2 bytes       count n of encrypted properties present, then n times:
//	              2 bytes name length, name (UTF-8)
//	12 bytes      nonce
//	16 bytes      tag: AES-256-GCM under the content key of an empty plaintext, with
//	              everything above as additional data
//
// What is bound (authenticated additional data), so that nothing moves unnoticed:
//
//   - a property's ciphertext: the entity's PartitionKey and RowKey and the property name
//     (each length-prefixed, after a domain string). A ciphertext copied to another
//     entity or another property, or an entity copied under other keys, fails with
//     ErrTampered. The content key is per entity, so pieces of two versions of one entity
//     do not mix either.
//   - the metadata: the PartitionKey, the RowKey, the key id, the algorithm, the wrapped
//     key and the list of encrypted properties. Removing an encrypted property, or
//     replacing it by a plaintext value, fails with ErrTampered; an entity of such a type
//     without metadata fails with ErrMissingKeyID.
//   - not bound by default: the table name (the archive patterns move entities verbatim
//     between tables, and they must stay readable there), the plaintext properties (see
//     "Signed plaintext" to bind chosen ones, and the table), and time: an older version
//     of a whole entity written back by someone holding the storage key is not detected
//     (use the ETag for that, as every write here does).
//
// Signed plaintext (opt-in, like the SIGN_ONLY attributes of the AWS Database Encryption
// SDK). A plaintext property tagged "sign" (an owner id, a blind index column: values a
// reader filters or decides on, so they cannot be encrypted) is authenticated together
// with the encrypted ones, and Encryption.Table optionally binds the table name. Changing
// a signed property, removing it, or copying the entity to another table (when bound) then
// fails the read with ErrTampered. Such entities carry metadata version 2, which appends
// to the version-1 layout above, before the nonce:
//
//	1 byte        flags (bit 0: the table name is bound)
//	2 bytes       count s of signed properties, then s times:
//	              2 bytes name length, name (UTF-8), 32 bytes SHA-256 of the domain
//	              string, the name and the property's canonical value (absent, or the JSON
//	              value Encode writes for it)
//
// and its tag authenticates, after a version-2 domain string and the keys, the table name
// (lowercase, length-prefixed) when bound. The digests hash values stored in plaintext
// next to them, so they reveal nothing more; canonical means re-encoded from the decoded
// field, so another spelling of the same value (an Int64 as a plain string) verifies.
// Entities without signed fields or binding keep writing version 1, and version-1
// entities (written before signing was adopted) stay readable by a signing type, without
// the check, unless Encryption.RequireSignatures is set: set it once every entity has
// been rewritten. A type that decrypts checks the signed properties it maps (a projection
// with an encrypted field checks what it reads; one without any encrypted field decrypts
// nothing and checks nothing). A signed property holding its type's zero value without
// omitempty is indistinguishable from its removal. Rewrap and Reencrypt keep signatures
// and binding; set Table on the rotating Encryption of a bound table.
//
// Decoding never writes: a wrong key (ErrWrongKey), an unknown key (ErrUnknownKey), a
// tampered entity (ErrTampered) or missing metadata (ErrMissingKeyID) is an
// *EncryptionError, and the stored entity stays as it was.
//
// Merges are refused (an *InvalidInputError): EncodeProperties of a type with encrypted
// fields, and repo's Merge mode. A merge would write new ciphertexts under a new content
// key next to old ones under the old key, and the one metadata property cannot describe
// both; the guide's library refuses it for the same reason, since the alternatives (read
// the entity first, or a key per property) cost a request or much space per entity.
// Upserts in Replace mode are whole writes and work.
//
// Cost: 29 bytes per encrypted property, and metadata of 36 bytes plus the key id, the
// algorithm name, the wrapped key (40 bytes with A256KW, 256 with RSA-2048) and 2 bytes
// plus the name of each encrypted property (110 bytes for three properties under an
// 8-character key id); base64 in the JSON body. CPU: a fresh content key, one WrapKey per write and one UnwrapKey per read (a
// LocalKey wraps locally; a remote vault costs a round trip, so cache in the
// KeyEncryptionKey implementation what the vault allows) and AES-GCM of each property.
// BenchmarkEncryptedProperty measures one encrypted property of the guide's employee.
//
// Encrypted values cannot be filtered on. For exact-match lookups (find an employee by
// e-mail) keep a BlindIndex value next to the ciphertext; see its privacy trade-off.
//
// # Errors
//
// Refusals of input are *InvalidInputError, the SDK-wide type; Decode failures are
// *DecodeError; Registry.Decode of an unregistered type is *UnknownEntityTypeError
// (errors.Is ErrUnknownEntityType); encryption and decryption failures are
// *EncryptionError. Nothing in this package panics on user input.
package codec
