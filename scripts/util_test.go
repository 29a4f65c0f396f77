package scripts

import (
	"encoding/binary"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"

	lua "github.com/yuin/gopher-lua"
)

type luaNumberT = lua.LNumber

func luaString(s string) lua.LValue { return lua.LString(s) }
func luaNumber(n int64) lua.LValue  { return lua.LNumber(n) }

func float32fromLE(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }
func float64fromLE(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }
func float64fromBE(b []byte) float64 { return math.Float64frombits(binary.BigEndian.Uint64(b)) }

func writeFile(path, src string) error { return os.WriteFile(path, []byte(src), 0o644) }

func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// runtimeMem reads the process's cumulative allocation.
type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.total = ms.TotalAlloc
}
