package report

import (
	_ "embed"
	"encoding/json"
	"strconv"
)

// The interactive charts: uPlot (report/uplot/, see its README.md), a
// small canvas chart library made for large time series, inlined into the
// page with the page's own script (chart.js), which draws every plotted
// field from the data chartData writes: zoom (drag across a chart, the
// wheel, the buttons), pan (shift+drag, shift+wheel, the buttons) and one
// cursor shared by every chart, reading each signal at the same instant.
// Without script the SVG charts stay: they are what prints and what a
// browser with script off shows.

//go:embed uplot/uPlot.iife.min.js
var uplotJS string

//go:embed uplot/uPlot.min.css
var uplotCSS string

//go:embed chart.js
var chartJS string

// chartData writes the charts' data as JSON: times in seconds from the
// focus (float64 holds them to the nanosecond for months around it), the
// axis, the triggers and their windows, and per charted signal its points
// with a null inserted in each gap (where uPlot breaks the line) and the
// gaps themselves (marked).
func chartData(r *Report, a axis, charted []int) string {
	rel := func(b []byte, t int64) []byte {
		return strconv.AppendFloat(b, float64(t-a.focus)/1e9, 'f', -1, 64)
	}
	str := func(b []byte, s string) []byte {
		q, _ := json.Marshal(s) // escapes <, > and &: safe inside <script>
		return append(b, q...)
	}
	b := []byte(`{"start":`)
	b = rel(b, a.start)
	b = append(b, `,"end":`...)
	b = rel(b, a.end)
	b = append(b, `,"live":`...)
	b = strconv.AppendBool(b, a.live)
	b = append(b, `,"triggers":[`...)
	for i, t := range r.Triggers {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"at":`...)
		b = rel(b, t.TimeNs)
		if from, to, _, _, ok := t.Window(); ok {
			b = append(b, `,"from":`...)
			b = rel(b, from)
			b = append(b, `,"to":`...)
			b = rel(b, to)
		}
		b = append(b, `,"reason":`...)
		b = str(b, t.Reason)
		b = append(b, '}')
	}
	b = append(b, `],"signals":[`...)
	for k, idx := range charted {
		s := &r.Signals[idx]
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"topic":`...)
		b = str(b, s.Topic)
		b = append(b, `,"field":`...)
		b = str(b, s.Field)
		b = append(b, `,"unit":`...)
		b = str(b, s.Unit)
		b = append(b, `,"gaps":[`...)
		for i, g := range s.Gaps {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = rel(b, g.AtNs)
			b = append(b, ',')
			b = rel(b, g.AtNs+g.DurationNs)
			b = append(b, ']')
		}
		// x and y, a null y in the middle of every gap
		var xs, ys []byte
		gi := 0
		for i, p := range s.Points {
			for gi < len(s.Gaps) && s.Gaps[gi].AtNs+s.Gaps[gi].DurationNs <= p.TimeNs {
				if i > 0 && s.Points[i-1].TimeNs <= s.Gaps[gi].AtNs {
					xs = rel(append(xs, ','), s.Gaps[gi].AtNs+s.Gaps[gi].DurationNs/2)
					ys = append(ys, ",null"...)
				}
				gi++
			}
			if i > 0 {
				xs, ys = append(xs, ','), append(ys, ',')
			}
			xs = rel(xs, p.TimeNs)
			ys = appendValue(ys, p.Value)
		}
		b = append(b, `],"x":[`...)
		b = append(b, xs...)
		b = append(b, `],"y":[`...)
		b = append(b, ys...)
		b = append(b, "]}"...)
	}
	return string(append(b, "]}"...))
}

// appendValue writes v in the fewest digits that read back the same: those
// of a float32 for a value a float32 field gave (most signals), which
// keeps the page's data about half as long.
func appendValue(b []byte, v float64) []byte {
	if f := float32(v); float64(f) == v {
		return strconv.AppendFloat(b, float64(f), 'g', -1, 32)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}
