package employees

import (
	"errors"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec"
)

// EmployeeSplit is the latest shape of the schema migration the tests and the test
// worker share: version 1 held the whole Name, version 2 splits it into FirstName and
// LastName. The keys stay.
type EmployeeSplit struct {
	Department string `table:",pk"`
	EmployeeID string `table:",rk"`
	ETag       string `table:",etag"`
	FirstName  string
	LastName   string
	Seq        int64
}

// SplitName upgrades version 1 to 2: Name "First Last" becomes FirstName and LastName.
func SplitName(e *codec.Entity) error {
	name, _ := e.Properties["Name"].(string)
	first, last, ok := strings.Cut(name, " ")
	if !ok {
		return errors.New("a Name without a space")
	}
	e.Properties["FirstName"], e.Properties["LastName"] = first, last
	delete(e.Properties, "Name")
	return nil
}

// JoinName downgrades version 2 to 1: the inverse of SplitName.
func JoinName(e *codec.Entity) error {
	first, _ := e.Properties["FirstName"].(string)
	last, _ := e.Properties["LastName"].(string)
	e.Properties["Name"] = first + " " + last
	delete(e.Properties, "FirstName")
	delete(e.Properties, "LastName")
	return nil
}
