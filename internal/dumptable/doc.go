// Package dumptable is dumpfile's parquet format: it reads a
// dumpfile.Source (pack or MCAP) as a table.Dump, with the types its topics
// record (Types) or that Options.Schemas give, writes the Parquet tables of
// package table (Export, Files), and registers itself in dumpfile's format
// table when imported. Programs that export or upload Parquet import it (the
// command line, the daemon); the readers of dumps that do not (the C
// library) stay without a Parquet writer and what it links, and without
// package schema's decoders.
//
// It is not for: the tables' layout (package table) or choosing a format
// (dumpfile).
//
// # Caveats
//
// Export reads the Source from its first message whatever was read before;
// like a Source, it is not safe for concurrent use on one Source.
package dumptable
