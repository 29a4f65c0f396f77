package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/pack"
)

// TestParquetPartitionNamedFields: a decoded field named like a Hive
// partition (vehicle, date, in any case) is written under another column
// (vehicle_, date_), so DuckDB's hive partitioning does not replace its
// values with the partition's; the export says so in a note. Checked with
// DuckDB over the exported tables, as docs/fleet.md's queries are.
func TestParquetPartitionNamedFields(t *testing.T) {
	dir := t.TempDir()
	layout := filepath.Join(dir, "edr.test.Fleet.layout")
	os.WriteFile(layout, []byte("# edr.test.Fleet\nu32le vehicle\nu32le date\nu32le Date\nu32le seq\n"), 0o644)
	dump := filepath.Join(dir, "20261202T133222.000000000Z_fleet_1.pack")
	w, err := pack.Create(dump, pack.WriterOptions{Writer: "partition-test"})
	if err != nil {
		t.Fatal(err)
	}
	const start = int64(1_796_218_342_000_000_000) // 2026-12-02
	for i := range 10 {
		var b []byte
		for _, v := range []uint32{1000 + uint32(i), 2000 + uint32(i), 3000 + uint32(i), uint32(i)} {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
		if err := w.Add("fleet/state", "", nil, 0, start+int64(i)*1e6, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.SetDumpInfo(dumpinfo.Info{Triggers: []dumpinfo.Trigger{{Reason: "fleet", TimeNs: start}}, StartNs: start, EndNs: start + 9e6}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tables := filepath.Join(dir, "tables")
	code, out, errs := runBin(t, "export", "--format", "parquet", "-o", tables, "--vehicle", "car-17", "--schema", "fleet/state="+layout, dump)
	if code != 0 {
		t.Fatalf("export: %d %s", code, errs)
	}
	for _, want := range []string{"vehicle: column vehicle_", "date: column date_", "Date: column Date__"} {
		if !strings.Contains(out, "note: fleet/state: field "+want) {
			t.Errorf("export does not say %q:\n%s", want, out)
		}
	}
	rows := duckdb(t, `SELECT vehicle, date, vehicle_ AS v, date_ AS d, "Date__" AS d2, seq
FROM read_parquet('s3://fleet-bucket/edr/parquet/edr.test.Fleet/*/*/*.parquet', hive_partitioning = true) ORDER BY seq`, tables)
	if len(rows) != 10 {
		t.Fatalf("rows: %v", rows)
	}
	for i, r := range rows {
		if r["vehicle"] != "car-17" || !strings.HasPrefix(r["date"].(string), "2026-12-02") ||
			num(t, r["v"]) != float64(1000+i) || num(t, r["d"]) != float64(2000+i) || num(t, r["d2"]) != float64(3000+i) {
			t.Errorf("row %d: %v", i, r)
		}
	}
}
