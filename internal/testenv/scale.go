package testenv

import "os"

// EnvSoak names the variable that runs the acceptance and load tests at full scale:
// `make soak` sets it to 1. Unset, they run at the scale that proves their promise in a
// few seconds each, so that `make test` stays short and holds on a busy machine.
const EnvSoak = "TABLEPATTERNS_SOAK"

// Soak reports whether the tests run at full scale (TABLEPATTERNS_SOAK=1).
func Soak() bool { return os.Getenv(EnvSoak) == "1" }

// Scale returns small, or soak when the tests run at full scale (TABLEPATTERNS_SOAK=1).
// A test keeps its scale in one place with it (a count of entities, of writers, of kills,
// or a duration) and says next to it why the small value still proves its promise.
func Scale[N ~int | ~int64](small, soak N) N {
	if Soak() {
		return soak
	}
	return small
}
