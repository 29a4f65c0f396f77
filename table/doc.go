// Package table turns dumps into tables that query engines read: Parquet
// files (github.com/parquet-go/parquet-go) partitioned the way DuckDB,
// Spark and Trino prune by, TABLE/vehicle=ID/date=YYYY-MM-DD/DUMP.parquet.
//
// In one paragraph: Write takes a Dump (its name, dump information, topics
// and a walk over its messages in file order) and writes three kinds of
// table: Messages, one row per message of every topic with the metadata
// columns (dump, topic, channel, type, capture and producer time, size, the
// trigger whose window holds it); one table per schema of the typed topics,
// the same columns followed by the decoded numeric fields, one column each
// (schema.NewDecoder's Fields and Numeric; ColumnName spells them); and
// Dumps, one row per dump with its triggers, window, per-topic accounting
// and labels as LIST columns. A topic's type comes from Options.Schemas
// (the export verb's --schema) or Options.Types (what the dump records);
// without one it is only in Messages. docs/fleet.md describes the columns
// and shows queries.
//
// It is not for: reading Parquet, choosing what to export (the export verb
// and internal/dumptable, which reads a dump file as a Dump), or storing
// payloads: they stay in the dump, the rows say where.
//
// # Caveats
//
//   - Memory: parquet-go holds a row group in memory until it writes it;
//     a row group has at most RowGroupRows rows, so a table costs about
//     RowGroupRows × its row size (before compression) plus a page per
//     column, whatever the dump's size.
//   - Numbers: Numeric reports float64; 64-bit integers beyond 2^53 lose
//     precision in their INT64 column.
//   - A decoded field whose column name (without case) a fixed column, a
//     partition (Partitions: vehicle, date) or an earlier field has gets
//     "_" appended, listed in Report.Renamed: hive partitioning would
//     otherwise replace its values with the partition's.
//   - Columns of varying-length arrays, maps, strings and bytes are not
//     made; Report.Skipped says which fields.
//   - Write is not safe for concurrent use on one Dump; different Dumps
//     may be written concurrently to different directories.
//   - Decoding a packed layout allocates nothing per message; through the
//     Decoder interface (protobuf, JSON) each message costs what
//     schema.Decoder.Numeric costs.
package table
