package bloblog

import (
	"strings"
	"time"
)

// Metadata names of a log blob (lowercase: Azurite lowercases names, the service keeps them).
const (
	metaStart   = "starttime"
	metaEnd     = "endtime"
	metaWriter  = "writer"
	metaVersion = "logversion"
	logVersion  = "1.0"
)

func (w *Writer) metadata(start, end time.Time) map[string]*string {
	return map[string]*string{
		metaStart:   ptr(formatTime(start)),
		metaEnd:     ptr(formatTime(end)),
		metaWriter:  ptr(w.id),
		metaVersion: ptr(logVersion),
	}
}

func metaValue(meta map[string]*string, name string) string {
	for k, v := range meta {
		if v != nil && strings.EqualFold(k, name) {
			return *v
		}
	}
	return ""
}

func ptr[V any](v V) *V { return &v }
