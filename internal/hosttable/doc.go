// Package hosttable is the layer that the stores over a host table in PostgreSQL sit on:
// pgstore.Store, for a whole job, and pgshard.Lease, for one key range of it. It holds the
// host table's catalog-checked statement pieces (a Spec, built by pgstore from its Config and
// the catalog), the keyset read over a key range, and the fenced, set-based commit of a
// batch's observations, findings and repair commands. Statements built beside it over the
// host table number their own parameters through a Query, which binds the Filter's values
// after them.
//
// A Table counts the writes made through it (Writes), so that a cache of its store's Status is
// dropped by that store's writes alone.
//
// It is internal to the module: pgstore hands its Table to pgshard (pgstore.Store.HostTable,
// which only packages of this module can call), and nothing here is an API to keep.
package hosttable
