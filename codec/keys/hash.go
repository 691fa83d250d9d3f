package keys

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// DefaultHashDigits is the number of hex digits HashPrefix uses when asked for 0 or fewer:
// the 4 digits (65,536 values) of the Tablestore's primary key design guide example.
const DefaultHashDigits = 4

// HashPrefix returns key prefixed with the first n lowercase hex digits of its MD5 and an
// underscore: HashPrefix("200001", 4) is "ddba_200001" (Tablestore's primary key design guide). Sequential keys such as
// order numbers then land in unrelated places of the key space, so writes spread over
// partitions; the cost is that a range of the original keys can no longer be read with one
// range query. A point read recomputes the same prefix from the key.
//
// The prefixes in the Tablestore key design guide's table ('ddba200001') are illustrative and are not the MD5
// of the order numbers; HashPrefix hashes the UTF-8 bytes of key, so HashPrefix("200001",
// 4) is "ee8f_200001". MD5 is used for its spread and its stability, not for security. n <= 0 means
// DefaultHashDigits; n above 32 (the length of an MD5 in hex) is taken as 32.
func HashPrefix(key string, n int) string {
	switch {
	case n <= 0:
		n = DefaultHashDigits
	case n > 2*md5.Size:
		n = 2 * md5.Size
	}
	sum := md5.Sum([]byte(key))
	var buf [2 * md5.Size]byte
	hex.Encode(buf[:], sum[:])
	return string(buf[:n]) + "_" + key
}

// StripHashPrefix returns the key inside a string made by HashPrefix (with any n), and
// checks that the prefix is the key's hash.
//
// It returns an *errs.InvalidInputError when s has no prefix of 1 to 32 lowercase hex
// digits and "_", or when the prefix does not match the key's MD5.
func StripHashPrefix(s string) (string, error) {
	i := strings.IndexByte(s, '_')
	if i < 1 || i > 2*md5.Size {
		return "", errs.Invalid("s", "want 1 to %d hex digits and \"_\" before the key", 2*md5.Size)
	}
	key := s[i+1:]
	if HashPrefix(key, i) != s {
		return "", errs.Invalid("s", "prefix %q is not the hash of the key", s[:i])
	}
	return key, nil
}

// Bucket returns which of buckets buckets key falls in, in [0, buckets): the first 8 bytes
// of its MD5 modulo buckets. It is stable across processes and versions: data written
// under one bucket is found under the same one later. buckets < 1 is taken as 1.
//
// Use it to spread a hot partition over a fixed number of partitions that a reader can
// query in parallel, e.g. the PartitionKey BucketKey("2024-05-01", 16).
func Bucket(key string, buckets int) int {
	if buckets <= 1 {
		return 0
	}
	sum := md5.Sum([]byte(key))
	return int(binary.BigEndian.Uint64(sum[:8]) % uint64(buckets))
}

// BucketKey returns key prefixed with its Bucket, zero-padded to the width of buckets-1
// and followed by "_": BucketKey(k, 16) is like "07_" + k. buckets < 1 is taken as 1.
func BucketKey(key string, buckets int) string {
	return BucketPrefix(Bucket(key, buckets), buckets) + key
}

// BucketPrefix returns the prefix BucketKey gives to the keys of bucket, e.g. "07_": a
// reader queries each bucket i in [0, buckets) with PrefixRange(BucketPrefix(i, buckets)).
// bucket must be in [0, buckets); other values are reduced modulo buckets.
func BucketPrefix(bucket, buckets int) string {
	if buckets < 1 {
		buckets = 1
	}
	bucket %= buckets
	if bucket < 0 {
		bucket += buckets
	}
	width := len(strconv.Itoa(buckets - 1))
	return padUint(uint64(bucket), width) + "_"
}

// SplitBucketKey returns the bucket number and the key of a string made by BucketKey.
//
// It returns an *errs.InvalidInputError when s does not start with 1 to 19 digits and "_".
func SplitBucketKey(s string) (bucket int, key string, err error) {
	i := strings.IndexByte(s, '_')
	if i < 1 {
		return 0, "", errs.Invalid("s", "want digits and \"_\" before the key")
	}
	v, err := ParsePad(s[:i])
	if err != nil {
		return 0, "", err
	}
	if int64(int(v)) != v {
		return 0, "", errs.Invalid("s", "bucket %d overflows int", v)
	}
	return int(v), s[i+1:], nil
}
