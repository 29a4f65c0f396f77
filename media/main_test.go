package media

import (
	"os"
	"testing"
)

// fixtureDir holds the MP4 files ffmpeg makes for the tests, once per run.
var fixtureDir string

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "media-test-")
	if err != nil {
		panic(err)
	}
	fixtureDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}
