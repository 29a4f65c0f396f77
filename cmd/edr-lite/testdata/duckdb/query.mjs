// Runs one SQL file with DuckDB (the @duckdb/node-api binary) and prints its
// rows as JSON: [{"column": value, ...}, ...]. BIGINTs print as numbers when
// they fit a double exactly, else as strings. Usage: node query.mjs FILE.sql [DIR]
// (DIR replaces every $DIR in the SQL).
import { readFileSync } from "node:fs";
import { DuckDBInstance } from "@duckdb/node-api";

const [file, dir = "."] = process.argv.slice(2);
const sql = readFileSync(file, "utf8").replaceAll("$DIR", dir);
const db = await DuckDBInstance.create(":memory:");
const conn = await db.connect();
const reader = await conn.runAndReadAll(sql);
const rows = reader.getRowObjectsJson();
process.stdout.write(JSON.stringify(rows) + "\n");
