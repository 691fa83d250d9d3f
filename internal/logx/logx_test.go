package logx

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestOrNop(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	l := zap.New(core)
	if OrNop(l) != l {
		t.Fatal("OrNop replaced a given logger")
	}
	n := OrNop(nil)
	if n == nil {
		t.Fatal("OrNop(nil) is nil")
	}
	n.Error("dropped")
	if n.Core().Enabled(zap.ErrorLevel) {
		t.Fatal("OrNop(nil) logs")
	}
	l.Info("kept")
	if logs.Len() != 1 {
		t.Fatalf("the given logger got %d entries, want 1", logs.Len())
	}
}
