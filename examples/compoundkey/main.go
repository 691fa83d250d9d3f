// Command compoundkey runs the compound key pattern of the table design guide (the Azure Table storage design guide,
// "compound key pattern") on the guide's data, on an embedded, in-memory Azurite: the
// yearly reviews of each employee live in the employee's partition under RowKeys like
// "empid_000123_2012", so that all reviews of one employee come back from one range query
// that transfers only the review fields, and a new review is stored in one transaction
// with the employee it updates.
//
//	go run ./examples/compoundkey
package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/patterns/compoundkey"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

func main() { tabletest.Main("compoundkey", run) }

// Employee is the guide's employee entity, RowKey "empid_000123".
type Employee struct {
	Department     string `table:",pk"`
	RowKey         string `table:",rk"`
	FirstName      string `table:"FirstName"`
	LastName       string `table:"LastName"`
	Age            int32  `table:"Age"`
	Email          string `table:"Email"`
	LastReviewYear int32  `table:"LastReviewYear,omitempty"`
	ETag           string `table:",etag"`
}

// Review is the guide's employee review entity, RowKey "empid_000123_2012". Its fields are
// what a review query selects.
type Review struct {
	Department    string `table:",pk"`
	RowKey        string `table:",rk"`
	ManagerRating int32  `table:"ManagerRating"`
	PeerRating    int32  `table:"PeerRating"`
	Comments      string `table:"Comments"`
}

var (
	employeeKey = compoundkey.MustLayout("empid", 1, nil) // empid_<id>
	reviewKey   = compoundkey.MustLayout("empid", 2, nil) // empid_<id>_<year>
)

func run(ctx context.Context, out io.Writer, connStr string) error {
	clients, err := account.NewClients(connStr, nil)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("EmployeeReviews%d", time.Now().UnixNano()%1e12)
	emps, err := repo.New[Employee](clients.Tables, name, nil)
	if err != nil {
		return err
	}
	if err := emps.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer emps.DeleteTable(context.WithoutCancel(ctx))
	rows, err := repo.New[Review](clients.Tables, name, nil)
	if err != nil {
		return err
	}
	reviews, err := compoundkey.New(rows, reviewKey, nil)
	if err != nil {
		return err
	}

	// The employees and three years of reviews each, all in the Sales partition.
	people := []struct {
		id          int64
		first, last string
	}{{123, "Don", "Hall"}, {124, "Jun", "Cao"}, {1234, "Ken", "Kwok"}}
	stored := 0
	for n, p := range people {
		id, _ := keys.Pad(p.id, 6)
		rk, err := employeeKey.Key(id)
		if err != nil {
			return err
		}
		if err := emps.Insert(ctx, &Employee{Department: "Sales", RowKey: rk, FirstName: p.first, LastName: p.last, Age: 30 + int32(n), Email: p.first + "@contoso.com"}); err != nil {
			return err
		}
		for year := 2011; year <= 2013; year++ {
			rk, err := reviewKey.Key(id, fmt.Sprint(year))
			if err != nil {
				return err
			}
			r := &Review{Department: "Sales", RowKey: rk, ManagerRating: int32(2 + (year+n)%4), PeerRating: int32(1 + (year*n)%5), Comments: fmt.Sprintf("%s %s, %d", p.first, p.last, year)}
			if err := reviews.Insert(ctx, r); err != nil {
				return err
			}
			stored++
		}
	}
	fmt.Fprintf(out, "stored %d employees and %d reviews in partition Sales\n", len(people), stored)

	lo, hi, err := reviewKey.Range("000123")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "reviews of employee 000123: RowKey ge '%s' and RowKey lt '%s', $select=ManagerRating,PeerRating,Comments\n", lo, hi)
	if err := list(ctx, out, reviews, "000123"); err != nil {
		return err
	}

	// A new review and the employee's LastReviewYear in one entity group transaction.
	rk, _ := employeeKey.Key("000123")
	don, err := emps.Get(ctx, "Sales", rk)
	if err != nil {
		return err
	}
	rrk, err := reviewKey.Key("000123", "2014")
	if err != nil {
		return err
	}
	add, err := reviews.InsertAction(&Review{Department: "Sales", RowKey: rrk, ManagerRating: 5, PeerRating: 4, Comments: "Don Hall, 2014"})
	if err != nil {
		return err
	}
	don.LastReviewYear = 2014
	if _, err := repo.Submit(ctx, add, emps.UpdateAction(&don, nil)); err != nil {
		return err
	}
	don, err = emps.Get(ctx, "Sales", rk)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "review 2014 stored with the employee in one transaction; LastReviewYear is now %d\n", don.LastReviewYear)
	if err := list(ctx, out, reviews, "000123"); err != nil {
		return err
	}
	fmt.Fprintln(out, "compound key finished")
	return nil
}

func list(ctx context.Context, out io.Writer, reviews *compoundkey.Table[Review], id string) error {
	for r, err := range reviews.List(ctx, "Sales", id) {
		if err != nil {
			return err
		}
		parts, err := reviewKey.Parse(r.RowKey)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  %s  year %s  manager %d  peer %d  %q\n", r.RowKey, parts[1], r.ManagerRating, r.PeerRating, r.Comments)
	}
	return nil
}
