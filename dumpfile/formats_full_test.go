//go:build !ecu

package dumpfile

// What the full build's formats table holds of camera files
// (formats_ecu_test.go: the ECU build's, none).
var (
	wantCameraFormats = []Format{
		{Name: FormatJPEGDir, Open: true, Export: true, Dir: true, Camera: true},
		{Name: FormatMP4, Open: true, Export: true, Camera: true},
	}
	wantReadable     = "pack, MCAP, JSON lines, MP4, candump log or ASC"
	wantCameraStarts = `MP4 has "ftyp" at byte 4, `
)
