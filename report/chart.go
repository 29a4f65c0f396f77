package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The page's geometry, in CSS pixels: a label column, then the plot area
// every time axis shares, so lanes, plots and the camera strip line up.
const (
	labelW   = 210 // topic and field names
	plotW    = 1000
	rightW   = 150 // loss badges
	chartW   = labelW + plotW + rightW
	laneH    = 18
	laneGap  = 5
	axisH    = 26
	sigH     = 110 // one signal plot
	sigPadV  = 8
	yInner   = 1000 // a plot's inner coordinates: 0..plotW × 0..yInner, scaled to the box
	tickFont = 11
)

// axis maps times onto the plot area and labels them relative to a focus.
type axis struct {
	start, end, focus int64
	live              bool
}

// x returns the plot-area x of t in [0, plotW].
func (a axis) x(t int64) float64 {
	if a.end <= a.start {
		return 0
	}
	v := float64(t-a.start) / float64(a.end-a.start) * plotW
	return math.Max(0, math.Min(plotW, v))
}

// rel labels t relative to the focus: "T+1.5s" ("-1.5s" on a live page).
func (a axis) rel(t int64) string {
	d := float64(t-a.focus) / 1e9
	prefix := "T"
	if a.live {
		prefix = ""
	}
	switch {
	case d == 0:
		if a.live {
			return "now"
		}
		return "T"
	case d > 0:
		return prefix + "+" + trimFloat(d) + "s"
	}
	return prefix + "−" + trimFloat(-d) + "s"
}

func trimFloat(v float64) string {
	s := strconv.FormatFloat(v, 'f', 3, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// niceStep returns a 1, 2 or 5 × 10^k step giving about n ticks over span.
func niceStep(span float64, n int) float64 {
	if span <= 0 || math.IsInf(span, 0) || math.IsNaN(span) {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// timeTicks returns tick times on whole multiples of a nice step from the
// focus.
func (a axis) timeTicks(n int) []int64 {
	span := float64(a.end-a.start) / 1e9
	step := niceStep(span, n)
	stepNs := int64(step * 1e9)
	if stepNs <= 0 {
		return nil
	}
	var out []int64
	first := a.focus - (a.focus-a.start)/stepNs*stepNs
	for t := first; t <= a.end && len(out) < 4*n; t += stepNs {
		if t >= a.start {
			out = append(out, t)
		}
	}
	return out
}

// svgText escapes s for SVG text or an attribute.
func svgText(s string) string { return html.EscapeString(s) }

// f1 formats a coordinate with at most one decimal.
func f1(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// timeAxis draws the shared time axis (ticks, labels, trigger marks) at y.
func (a axis) timeAxis(b *strings.Builder, y int, triggers []int64) {
	fmt.Fprintf(b, `<g class="axis"><line x1="%d" y1="%d" x2="%d" y2="%d"/>`, labelW, y, labelW+plotW, y)
	for _, t := range a.timeTicks(10) {
		x := labelW + a.x(t)
		fmt.Fprintf(b, `<line x1="%s" y1="%d" x2="%s" y2="%d"/><text x="%s" y="%d" text-anchor="middle">%s</text>`,
			f1(x), y, f1(x), y+4, f1(x), y+4+tickFont+1, svgText(a.rel(t)))
	}
	b.WriteString(`</g>`)
}

// triggerLines draws a vertical line at each trigger time over [y0, y1].
func (a axis) triggerLines(b *strings.Builder, y0, y1 int, triggers []int64) {
	for _, t := range triggers {
		if t < a.start || t > a.end {
			continue
		}
		x := labelW + a.x(t)
		fmt.Fprintf(b, `<line class="trigger" x1="%s" y1="%d" x2="%s" y2="%d"/>`, f1(x), y0, f1(x), y1)
	}
}

// lossCauses are the accounting's loss counters, in the order and colour
// classes the timeline uses.
var lossCauses = []struct{ class, label string }{
	{"overwritten", "overwritten"},
	{"lostsrc", "lost at source"},
	{"oversize", "oversize"},
	{"busy", "skipped while busy"},
}

func lossCounts(ac Accounting) []uint64 {
	return []uint64{ac.Overwritten, ac.LostAtSource, ac.Oversize, ac.SkippedBusy}
}

// timelineSVG draws one lane per topic: the asked window (outline), the
// held window (band), the message rate per bin (area, scaled to the
// lane's peak), gaps (red), the part of the asked window before the
// first message (hatched: overwritten when the dump counted overwrites),
// loss counts by cause on the right, trigger lines across.
func timelineSVG(r *Report, a axis) string {
	var b strings.Builder
	h := len(r.Topics)*(laneH+laneGap) + axisH + 4
	fmt.Fprintf(&b, `<svg class="timeline" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="topic timeline">`, chartW, h, chartW, h)
	b.WriteString(`<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" class="hatchline"/></pattern></defs>`)
	for i, t := range r.Topics {
		y := i * (laneH + laneGap)
		fmt.Fprintf(&b, `<g class="lane"><title>%s</title>`, svgText(laneTitle(&t)))
		fmt.Fprintf(&b, `<text class="label" x="%d" y="%d" text-anchor="end">%s</text>`, labelW-8, y+laneH-5, svgText(clip(t.Name, 30)))
		fmt.Fprintf(&b, `<rect class="lanebg" x="%d" y="%d" width="%d" height="%d"/>`, labelW, y, plotW, laneH)
		if t.AskedToNs > t.AskedFromNs {
			x0, x1 := a.x(t.AskedFromNs), a.x(t.AskedToNs)
			fmt.Fprintf(&b, `<rect class="asked" x="%s" y="%d" width="%s" height="%d"/>`, f1(labelW+x0), y, f1(x1-x0), laneH)
		}
		if t.Messages > 0 {
			x0, x1 := a.x(t.FirstNs), a.x(t.LastNs)
			fmt.Fprintf(&b, `<rect class="held" x="%s" y="%d" width="%s" height="%d"/>`, f1(labelW+x0), y+1, f1(math.Max(x1-x0, 1)), laneH-2)
			// the part of the asked window before the first message, when
			// the asked start is on the axis (not cut off by --from)
			if t.AskedToNs > t.AskedFromNs && t.FirstNs > t.AskedFromNs && t.AskedFromNs >= r.StartNs {
				xa := a.x(t.AskedFromNs)
				fmt.Fprintf(&b, `<rect class="missing %s" x="%s" y="%d" width="%s" height="%d"><title>%s</title></rect>`,
					shortClass(t.Accounting.StartShort, t.Accounting.Overwritten), f1(labelW+xa), y+1, f1(math.Max(x0-xa, 0)), laneH-2,
					svgText(shortTitle("asked from", t.AskedFromNs, "first message at", t.FirstNs, t.Accounting.StartShort, t.Accounting.Overwritten, a)))
			}
			if t.AskedToNs > t.AskedFromNs && t.LastNs < t.AskedToNs && t.Accounting.EndShort != "" && t.AskedToNs <= r.EndNs {
				xb := a.x(t.AskedToNs)
				fmt.Fprintf(&b, `<rect class="missing %s" x="%s" y="%d" width="%s" height="%d"><title>%s</title></rect>`,
					shortClass(t.Accounting.EndShort, 0), f1(labelW+x1), y+1, f1(math.Max(xb-x1, 0)), laneH-2,
					svgText(shortTitle("asked to", t.AskedToNs, "last message at", t.LastNs, t.Accounting.EndShort, 0, a)))
			}
		}
		// rate area
		var peak uint32
		for _, c := range t.Bins {
			peak = max(peak, c)
		}
		if peak > 0 && t.BinNs > 0 {
			fmt.Fprintf(&b, `<svg x="%d" y="%d" width="%d" height="%d" viewBox="0 0 %d %d" preserveAspectRatio="none">`,
				labelW, y+2, plotW, laneH-3, plotW, yInner)
			b.WriteString(`<path class="rate" d="`)
			for k, c := range t.Bins {
				x0 := a.x(r.StartNs + int64(k)*t.BinNs)
				x1 := a.x(min(r.StartNs+int64(k+1)*t.BinNs, r.EndNs))
				yv := yInner - int(int64(c)*yInner/int64(peak))
				if k == 0 {
					fmt.Fprintf(&b, "M%s %dV%d", f1(x0), yInner, yv)
				} else {
					fmt.Fprintf(&b, "V%d", yv)
				}
				fmt.Fprintf(&b, "H%s", f1(x1))
			}
			fmt.Fprintf(&b, `V%dZ"/></svg>`, yInner)
		}
		for _, g := range t.Gaps {
			x0, x1 := a.x(g.AtNs), a.x(g.AtNs+g.DurationNs)
			fmt.Fprintf(&b, `<rect class="gap" x="%s" y="%d" width="%s" height="%d"><title>gap of %s from %s</title></rect>`,
				f1(labelW+x0), y, f1(math.Max(x1-x0, 1.5)), laneH, svgText(fmtDur(g.DurationNs)), svgText(a.rel(g.AtNs)))
		}
		// loss badges
		bx := labelW + plotW + 6
		for k, n := range lossCounts(t.Accounting) {
			if n == 0 {
				continue
			}
			label := fmt.Sprintf("%d", n)
			fmt.Fprintf(&b, `<g class="badge %s"><title>%d %s</title><rect x="%d" y="%d" width="%d" height="%d" rx="3"/><text x="%d" y="%d">%s</text></g>`,
				lossCauses[k].class, n, lossCauses[k].label, bx, y+2, 8+7*len(label), laneH-4, bx+4, y+laneH-6, label)
			bx += 12 + 7*len(label)
		}
		b.WriteString(`</g>`)
	}
	trig := triggerTimes(r)
	lanesH := len(r.Topics) * (laneH + laneGap)
	a.triggerLines(&b, 0, lanesH, trig)
	a.timeAxis(&b, lanesH+2, trig)
	b.WriteString(`</svg>`)
	return b.String()
}

func laneTitle(t *Topic) string {
	s := fmt.Sprintf("%s: %d messages, %.1f Hz", t.Name, t.Messages, t.Timing.RateHz)
	for k, n := range lossCounts(t.Accounting) {
		if n > 0 {
			s += fmt.Sprintf(", %d %s", n, lossCauses[k].label)
		}
	}
	if len(t.Gaps) > 0 {
		s += fmt.Sprintf(", %d gaps (largest %s)", len(t.Gaps), fmtDur(t.Gaps[0].DurationNs))
	}
	return s
}

// shortClass is the hatch of a part of the asked window without data:
// the overwritten colour when the ring dropped it, grey otherwise.
func shortClass(short string, overwritten uint64) string {
	if short == "overwritten" || short == "" && overwritten > 0 {
		return "overwritten"
	}
	return "nodata"
}

// shortWhy says in words why the held window falls short.
var shortWhy = map[string]string{
	"not_recorded":     "the topic was not recorded yet (discovered, or the recorder started, later)",
	"overwritten":      "overwritten (the ring's byte cap) before the dump read it",
	"producer_offline": "the producer went offline",
	"recorder_stopped": "the recorder stopped",
}

func shortTitle(what string, asked int64, held string, at int64, short string, overwritten uint64, a axis) string {
	why := shortWhy[short]
	switch {
	case why == "" && short != "":
		why = short
	case why == "" && overwritten > 0:
		why = fmt.Sprintf("%d messages overwritten before the dump read them", overwritten)
	case why == "":
		why = "no data held (no cause recorded)"
	}
	return fmt.Sprintf("%s %s, %s %s: %s", what, a.rel(asked), held, a.rel(at), why)
}

func triggerTimes(r *Report) []int64 {
	out := make([]int64, 0, len(r.Triggers))
	for _, t := range r.Triggers {
		out = append(out, t.TimeNs)
	}
	return out
}

// clip keeps the last n-1 bytes of a long name after an ellipsis, cut at
// a UTF-8 boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n + 1
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return "…" + s[i:]
}

// yRange returns the plotted value range of a signal, padded so a flat
// signal sits in the middle.
func yRange(s *Signal) (float64, float64) {
	lo, hi := s.Min, s.Max
	if s.Count == 0 {
		return 0, 1
	}
	if hi-lo < 1e-12*math.Max(math.Abs(lo), 1) {
		pad := math.Max(math.Abs(lo)*0.1, 1)
		return lo - pad, hi + pad
	}
	pad := (hi - lo) * 0.05
	return lo - pad, hi + pad
}

// signalSVG draws one field over the shared time axis: y ticks with the
// unit, the trigger lines, the points as one path.
func signalSVG(s *Signal, a axis, triggers []int64, withAxis bool) string {
	var b strings.Builder
	h := sigH + 2*sigPadV
	if withAxis {
		h += axisH
	}
	fmt.Fprintf(&b, `<svg class="signal" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`,
		chartW, h, chartW, h, svgText(s.Topic+" "+s.Field))
	top, bottom := sigPadV, sigPadV+sigH
	name := s.Field
	if s.Unit != "" {
		name += " (" + s.Unit + ")"
	}
	fmt.Fprintf(&b, `<text class="label" x="2" y="%d">%s</text>`, top+sigH/2, svgText(clip(name, 22)))
	fmt.Fprintf(&b, `<text class="sublabel" x="2" y="%d">%s</text>`, top+sigH/2+14, svgText(fmt.Sprintf("%d samples", s.Count)))
	fmt.Fprintf(&b, `<rect class="plotbg" x="%d" y="%d" width="%d" height="%d"/>`, labelW, top, plotW, sigH)
	lo, hi := yRange(s)
	yOf := func(v float64) float64 { return float64(bottom) - (v-lo)/(hi-lo)*sigH }
	step := niceStep(hi-lo, 4)
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		y := yOf(v)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%s" x2="%d" y2="%s"/><text class="ytick" x="%d" y="%s" text-anchor="end">%s</text>`,
			labelW, f1(y), labelW+plotW, f1(y), labelW-3, f1(y+4), svgText(fmtValue(v, step)))
	}
	a.triggerLines(&b, top, bottom, triggers)
	for _, g := range s.Gaps { // marked; the line breaks there
		x0, x1 := a.x(g.AtNs), a.x(g.AtNs+g.DurationNs)
		fmt.Fprintf(&b, `<rect class="siggap" x="%s" y="%d" width="%s" height="%d"><title>gap of %s from %s</title></rect>`,
			f1(labelW+x0), top, f1(math.Max(x1-x0, 1)), sigH, svgText(fmtDur(g.DurationNs)), svgText(a.rel(g.AtNs)))
	}
	if len(s.Points) > 0 {
		fmt.Fprintf(&b, `<svg x="%d" y="%d" width="%d" height="%d" viewBox="0 0 %d %d" preserveAspectRatio="none">`,
			labelW, top, plotW, sigH, plotW, yInner)
		b.WriteString(`<path class="line" vector-effect="non-scaling-stroke" d="`)
		// x in tenths of a pixel, y in whole inner units: written with
		// strconv into one buffer (a plot has up to 4 × Columns points)
		var buf []byte
		lastX := int64(-1)
		gi := 0
		for k, p := range s.Points {
			x := int64(math.Round(a.x(p.TimeNs) * 10))
			y := int64(math.Round(float64(yInner) - (p.Value-lo)/(hi-lo)*yInner))
			brk := false // a gap lies between the previous point and this one
			for gi < len(s.Gaps) && s.Gaps[gi].AtNs+s.Gaps[gi].DurationNs <= p.TimeNs {
				brk = brk || k > 0 && s.Points[k-1].TimeNs <= s.Gaps[gi].AtNs
				gi++
			}
			switch {
			case k > 0 && x == lastX && !brk:
				buf = append(buf, 'V')
			default:
				if k == 0 || brk {
					buf = append(buf, 'M')
				} else {
					buf = append(buf, 'L')
				}
				buf = strconv.AppendInt(buf, x/10, 10)
				if x%10 != 0 {
					buf = append(buf, '.', byte('0'+x%10))
				}
				buf = append(buf, ' ')
			}
			buf = strconv.AppendInt(buf, y, 10)
			lastX = x
		}
		b.Write(buf)
		if len(s.Points) == 1 {
			b.WriteString("h0.5") // one sample: a dot
		}
		b.WriteString(`"/></svg>`)
	}
	if withAxis {
		a.timeAxis(&b, bottom+2, triggers)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// fmtValue formats a tick value with the precision its step needs.
func fmtValue(v, step float64) string {
	if math.Abs(v) < step/1e6 {
		v = 0
	}
	dec := max(0, int(-math.Floor(math.Log10(step))))
	if math.Abs(v) >= 1e6 || (v != 0 && math.Abs(v) < 1e-4) {
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	return strconv.FormatFloat(v, 'f', min(dec, 9), 64)
}

// fmtDur formats ns for people: "1.25ms", "3.2s".
func fmtDur(ns int64) string {
	neg := ns < 0
	v := math.Abs(float64(ns))
	var s string
	switch {
	case v < 1e3:
		s = fmt.Sprintf("%.0fns", v)
	case v < 1e6:
		s = trimFloat(math.Round(v/1e3*100)/100) + "µs"
	case v < 1e9:
		s = trimFloat(math.Round(v/1e6*100)/100) + "ms"
	default:
		s = trimFloat(math.Round(v/1e9*1000)/1000) + "s"
	}
	if neg {
		return "−" + s
	}
	return s
}
