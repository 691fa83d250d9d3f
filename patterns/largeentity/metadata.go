package largeentity

import (
	"encoding/base64"
	"strings"
)

// Metadata names on every blob of a Store, so that the sweeper can find the entity that
// should reference it. Keys are base64url (they may hold characters a header cannot).
// Names are lowercase: the service keeps their case, Azurite lowercases them.
const (
	metaPartitionKey = "partitionkey"
	metaRowKey       = "rowkey"
	metaProperty     = "property"
)

// metadataKeys reads the entity keys a Store writes into each blob's metadata. Metadata
// names are compared case-insensitively (the service keeps their case, Azurite lowercases
// them).
func metadataKeys(meta map[string]*string) (entityKey, bool) {
	var pkv, rkv *string
	for name, v := range meta {
		switch {
		case strings.EqualFold(name, metaPartitionKey):
			pkv = v
		case strings.EqualFold(name, metaRowKey):
			rkv = v
		}
	}
	if pkv == nil || rkv == nil {
		return entityKey{}, false
	}
	pk, err1 := base64.RawURLEncoding.DecodeString(*pkv)
	rk, err2 := base64.RawURLEncoding.DecodeString(*rkv)
	if err1 != nil || err2 != nil {
		return entityKey{}, false
	}
	return entityKey{string(pk), string(rk)}, true
}
