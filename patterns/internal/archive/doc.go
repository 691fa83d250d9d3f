// Package archive holds what the two archive packages share: the names of the blobs
// they write (a table's folder is its name in lower case), the allowlists an archiver
// applies to the tables and containers a job names, the container creation both
// targets need, and what a job's outcome makes of its message (Outcome, Permanent,
// HandlerError). patterns/consistency moves entities and ranges; patterns/tablearchive
// exports whole tables. One worker runs the jobs of both, with one allowlist.
package archive
