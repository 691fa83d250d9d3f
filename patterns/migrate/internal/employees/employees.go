// Package employees is the guide's employee data in the two layouts the migration tests
// and the test worker share: Employee, one partition per department (a hot partition),
// and EmployeeV2, the department behind a hash prefix of the employee.
package employees

import (
	"fmt"
	"hash/fnv"
)

// Employee is the old layout.
type Employee struct {
	Department string `table:",pk"`
	EmployeeID string `table:",rk"`
	ETag       string `table:",etag"`
	Name       string
	Seq        int64
}

// EmployeeV2 is the new layout: PartitionKey "NN|Department", NN a hash of the RowKey.
type EmployeeV2 struct {
	Partition  string `table:",pk"`
	EmployeeID string `table:",rk"`
	ETag       string `table:",etag"`
	Department string
	Name       string
	Seq        int64
}

// Buckets is the number of hash prefixes a department spreads over.
const Buckets = 4

// HashKeys maps an old key to the new one.
func HashKeys(pk, rk string) (string, string, error) {
	h := fnv.New32a()
	h.Write([]byte(rk))
	return fmt.Sprintf("%02d|%s", h.Sum32()%Buckets, pk), rk, nil
}

// Upgrade maps an old value to the new shape.
func Upgrade(e Employee) (EmployeeV2, error) {
	return EmployeeV2{Department: e.Department, EmployeeID: e.EmployeeID, Name: e.Name, Seq: e.Seq}, nil
}
