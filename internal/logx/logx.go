// Package logx holds the logging idioms written once for the whole SDK.
package logx

import "go.uber.org/zap"

// nop is shared: a no-op logger holds no state that a caller could change.
var nop = zap.NewNop()

// OrNop returns l, or a no-op logger when l is nil: the default of every Logger option
// ("nil logs nothing").
func OrNop(l *zap.Logger) *zap.Logger {
	if l == nil {
		return nop
	}
	return l
}
