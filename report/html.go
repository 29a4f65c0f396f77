package report

import (
	"encoding/base64"
	"fmt"
	"html"
	"html/template"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/internal/units"
)

// HTMLOptions tune the page.
type HTMLOptions struct {
	// RefreshS, when > 0, makes the page reload itself every RefreshS
	// seconds (a meta refresh: the live page).
	RefreshS int
	// Nav is an optional link back ("/dumps/"), local to the server that
	// serves the page.
	Nav []NavLink
}

// NavLink is a link in the page's header.
type NavLink struct {
	Href, Text string
}

// WriteHTML writes the report as one self-contained HTML page: CSS, SVG
// plots, thumbnails (data: URIs) and the charts' script (uPlot and the
// page's chart.js, which turn the plots into zoomable charts with a shared
// cursor) inline, nothing fetched from anywhere, printable, readable
// without script (the SVG plots).
func WriteHTML(w io.Writer, r *Report, o HTMLOptions) error {
	a := axis{start: r.StartNs, end: r.EndNs, focus: r.FocusNs, live: r.Live}
	trig := triggerTimes(r)
	p := page{R: r, O: o, axis: a, focus: a.focus}
	p.Timeline = template.HTML(timelineSVG(r, a))
	var charted []int // indexes into r.Signals of the charts, in page order
	for i := 0; i < len(r.Signals); {
		g := sigGroup{Topic: r.Signals[i].Topic}
		j := i
		var plots []int
		for ; j < len(r.Signals) && r.Signals[j].Topic == g.Topic; j++ {
			if r.Signals[j].Values {
				p.Values = append(p.Values, valueRows(&r.Signals[j], a)...)
				continue
			}
			plots = append(plots, j)
		}
		for k, idx := range plots {
			g.Plots = append(g.Plots, template.HTML(fmt.Sprintf(`<div class="uchart" data-signal="%d">`, len(charted))+
				signalSVG(&r.Signals[idx], a, trig, k == len(plots)-1)+`</div>`))
			charted = append(charted, idx)
		}
		if len(g.Plots) > 0 {
			p.Signals = append(p.Signals, g)
		}
		i = j
	}
	p.ChartData = template.JS(chartData(r, a, charted))
	p.UPlotJS, p.UPlotCSS, p.ChartJS = template.JS(uplotJS), template.CSS(uplotCSS), template.JS(chartJS)
	return pageTmpl().Execute(w, &p)
}

// valueRow is one sample of a field shown as values (Signal.Values).
type valueRow struct {
	Topic, Field, At, Value string
}

func valueRows(s *Signal, a axis) []valueRow {
	name := s.Field
	if s.Unit != "" {
		name += " (" + s.Unit + ")"
	}
	var out []valueRow
	for _, pt := range s.Points {
		out = append(out, valueRow{s.Topic, name, a.rel(pt.TimeNs), strconv.FormatFloat(pt.Value, 'g', -1, 64)})
	}
	return out
}

type page struct {
	R        *Report
	O        HTMLOptions
	axis     axis
	focus    int64
	Timeline template.HTML
	Signals  []sigGroup
	// Values are the samples of the fields shown as values.
	Values []valueRow
	// ChartData is the charts' data (chartData); UPlotJS, UPlotCSS the
	// inlined uPlot library, ChartJS the page's script that draws the
	// interactive charts with it.
	ChartData, UPlotJS, ChartJS template.JS
	UPlotCSS                    template.CSS
}

type sigGroup struct {
	Topic string
	Plots []template.HTML
}

// Rel labels a time relative to the focus.
func (p *page) Rel(t int64) string { return p.axis.rel(t) }

// Focus is the time the camera strip centres on.
func (p *page) Focus() int64 { return p.focus }

var funcs = template.FuncMap{
	"time": func(ns int64) string {
		if ns == 0 {
			return "-"
		}
		return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05.000000000Z")
	},
	"dur":  fmtDur,
	"size": func(n any) string { return units.FormatSize(toInt64(n)) },
	"hz": func(v float64) string {
		if v == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f Hz", v)
	},
	"ratio": func(f File) string {
		if f.RawBytes <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", float64(f.StoredBytes)/float64(f.RawBytes))
	},
	"join":      strings.Join,
	"sub":       func(a, b int64) int64 { return a - b },
	"gapFactor": func() int { return GapFactor },
	// img writes the thumbnail as a data: URI by hand: html/template
	// would escape every "+" of the base64 as "&#43;".
	"img": func(b []byte, alt string) template.HTML {
		return template.HTML(`<img src="data:image/jpeg;base64,` + base64.StdEncoding.EncodeToString(b) +
			`" alt="` + html.EscapeString(alt) + `" width="240">`)
	},
	"val":    func(v float64) string { return fmtValue(v, niceStep(v, 1000)/1000) },
	"window": triggerWindow,
	"params": func(m map[string]string) string {
		var parts []string
		for k, v := range m {
			parts = append(parts, k+"="+v)
		}
		sort.Strings(parts)
		return strings.Join(parts, " ")
	},
}

func toInt64(n any) int64 {
	switch v := n.(type) {
	case int64:
		return v
	case uint64:
		return int64(v)
	case int:
		return int64(v)
	}
	return 0
}

// pageTmpl is parsed on first use: every verb of the binary would pay for
// it at start otherwise.
var pageTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Funcs(funcs).Parse(pageSrc))
})

const pageSrc = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{{if gt .O.RefreshS 0}}<meta http-equiv="refresh" content="{{.O.RefreshS}}">
{{end}}<title>{{.R.Title}}</title>
<style>
:root { --ink: #1d2330; --muted: #5b6475; --line: #d6dae2; --bg: #ffffff; --panel: #f5f7fa;
  --trigger: #d7263d; --rate: #2b6cb0; --signal: #1f5fa8; --gap: #e53e3e; }
* { box-sizing: border-box; }
body { margin: 0 auto; padding: 16px 24px 48px; max-width: 1420px; color: var(--ink); background: var(--bg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
h1 { font-size: 22px; margin: 4px 0 2px; }
h2 { font-size: 17px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 14px 0 2px; font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
nav a { margin-right: 12px; }
.sub { color: var(--muted); margin: 0 0 10px; }
table { border-collapse: collapse; margin: 6px 0; font-size: 13px; }
th, td { padding: 3px 9px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: var(--panel); font-weight: 600; white-space: nowrap; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.t { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12px; }
.trig td { background: #fff5f5; }
.bad { color: #b00020; font-weight: 600; }
.ok { color: #1a7f37; font-weight: 600; }
.chart { overflow-x: auto; }
svg { max-width: 100%; height: auto; display: block; font: 11px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; }
svg .label { font: 12px ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; fill: var(--ink); }
svg .sublabel, svg .ytick, svg .axis text { fill: var(--muted); }
svg .axis line { stroke: #8a93a6; stroke-width: 1; }
svg .lanebg { fill: #f7f8fa; }
svg .asked { fill: none; stroke: #8a93a6; stroke-dasharray: 3 2; stroke-width: 1; }
svg .held { fill: #e3ecf8; }
svg .rate { fill: var(--rate); fill-opacity: 0.75; }
svg .gap { fill: var(--gap); fill-opacity: 0.85; }
svg .missing { fill: url(#hatch); }
svg .hatchline { stroke: #b7791f; stroke-width: 2; }
svg .missing.nodata { opacity: 0.45; }
svg .trigger { stroke: var(--trigger); stroke-width: 1.5; stroke-dasharray: 5 3; }
svg .plotbg { fill: #fbfcfd; stroke: var(--line); }
svg .grid { stroke: #e8ebf0; }
svg .line { fill: none; stroke: var(--signal); stroke-width: 1.3; stroke-linejoin: round; }
svg .siggap { fill: var(--gap); fill-opacity: 0.13; }
svg .badge text { fill: #fff; font-weight: 600; }
svg .badge.overwritten rect, .sw.overwritten { fill: #b7791f; background: #b7791f; }
svg .badge.lostsrc rect, .sw.lostsrc { fill: #805ad5; background: #805ad5; }
svg .badge.oversize rect, .sw.oversize { fill: #8b4513; background: #8b4513; }
svg .badge.busy rect, .sw.busy { fill: #4a5568; background: #4a5568; }
.legend { color: var(--muted); font-size: 12px; margin: 4px 0 8px; }
.legend span.sw { display: inline-block; width: 11px; height: 11px; margin: 0 4px 0 12px; vertical-align: -1px; border-radius: 2px; }
.sw.trig { background: var(--trigger); } .sw.gap { background: var(--gap); } .sw.rate { background: var(--rate); }
.sw.held { background: #e3ecf8; border: 1px solid #b9c6da; } .sw.asked { border: 1px dashed #8a93a6; }
.strip { display: flex; flex-wrap: wrap; gap: 8px; margin: 6px 0 12px; }
figure { margin: 0; width: 244px; }
figure img { display: block; width: 240px; height: auto; border: 2px solid var(--line); border-radius: 3px; background: #000; }
figure.at img { border-color: var(--trigger); }
figure .ph { width: 240px; height: 135px; border: 2px dashed var(--line); border-radius: 3px; padding: 8px; color: var(--muted); font-size: 12px; overflow: hidden; }
figcaption { font-size: 12px; color: var(--muted); }
figcaption b { color: var(--ink); }
.notes li { color: var(--muted); }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; }
.toolbar { position: sticky; top: 0; z-index: 5; background: var(--bg); padding: 4px 0; border-bottom: 1px solid var(--line); font-size: 12px; }
.toolbar button { font: inherit; margin-right: 4px; padding: 2px 8px; border: 1px solid var(--line); border-radius: 3px; background: var(--panel); cursor: pointer; }
.toolbar span { margin-left: 8px; color: var(--muted); font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.uchart { margin: 2px 0 6px; }
.uplot .u-legend { font-size: 12px; text-align: left; }
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; }
  nav { display: none; }
  h2 { break-after: avoid; }
  svg, figure, tr, .strip { break-inside: avoid; }
  .chart { overflow: visible; }
  a { color: inherit; text-decoration: none; }
}
</style>
<style>{{.UPlotCSS}}</style>
</head>
<body>
{{if .O.Nav}}<nav>{{range .O.Nav}}<a href="{{.Href}}">{{.Text}}</a>{{end}}</nav>
{{end}}<h1>{{.R.Title}}</h1>
<p class="sub">{{time .R.StartNs}} – {{time .R.EndNs}} ({{dur (sub .R.EndNs .R.StartNs)}}){{if .R.Live}} · live, recent window of every topic{{if gt .O.RefreshS 0}}, refreshed every {{.O.RefreshS}} s{{end}}{{end}} · {{len .R.Topics}} topics</p>

<h2 id="triggers">Triggers</h2>
{{if .R.Triggers}}<table>
<tr><th>time (UTC)</th><th>reason</th><th>source</th><th>tag</th><th class="n">severity</th><th class="n">window</th><th>params</th></tr>
{{range .R.Triggers}}<tr class="trig"><td class="t">{{time .TimeNs}}</td><td><b>{{.Reason}}</b></td><td>{{.Source}}{{if .Rule}}:{{.Rule}}{{end}}</td><td>{{.Tag}}</td><td class="n">{{if .Severity}}{{.Severity}}{{end}}</td><td class="n">{{window .}}</td><td class="t">{{params .Params}}</td></tr>
{{end}}</table>
<p class="sub">Times below are relative to the first trigger, T = {{time .R.FocusNs}}.</p>
{{else}}<p class="sub">{{if .R.Live}}Live recorder: no trigger; times are relative to now.{{else}}No trigger recorded in the dump; times are relative to its start.{{end}}</p>
{{end}}
<h2 id="timeline">Topic timeline</h2>
<div class="legend"><span class="sw rate"></span>message rate (per lane, scaled to its peak)<span class="sw held"></span>held window<span class="sw asked"></span>asked window<span class="sw gap"></span>gap &gt; {{gapFactor}}× median interval<span class="sw trig"></span>trigger<span class="sw overwritten"></span>overwritten<span class="sw lostsrc"></span>lost at source<span class="sw oversize"></span>oversize<span class="sw busy"></span>skipped while busy</div>
<div class="chart">{{.Timeline}}</div>

<h2 id="signals">Signals</h2>
{{if .Signals}}<div id="edr-toolbar" class="toolbar" hidden></div>
<p class="sub">Drag across a chart to zoom, the wheel zooms, shift+drag or shift+wheel pans, double-click shows the whole dump; every chart follows, and one cursor reads every signal at the same instant. Shaded: a gap (no sample for more than {{gapFactor}}× the topic's median interval; the line is broken there).</p>
{{range .Signals}}<h3>{{.Topic}}</h3>
<div class="chart">{{range .Plots}}{{.}}{{end}}</div>
{{end}}{{else if not .Values}}<p class="sub">No decoded numeric fields. Topics are decoded when the dump records their schema, or with <code>--schema TOPIC=LAYOUT_FILE</code>.</p>
{{end}}{{if .Values}}<h3>Latched and single-sample values</h3>
<table class="values">
<tr><th>topic</th><th>field</th><th>at</th><th class="n">value</th></tr>
{{range .Values}}<tr><td class="t">{{.Topic}}</td><td class="t">{{.Field}}</td><td class="t">{{.At}}</td><td class="n">{{.Value}}</td></tr>
{{end}}</table>
{{end}}
<h2 id="cameras">Cameras</h2>
{{if .R.Cameras}}{{range .R.Cameras}}<h3>{{.Topic}}</h3>
<div class="strip">{{range .Frames}}{{if .Thumb}}<figure{{if .Trigger}} class="at"{{end}}>{{img .Thumb (printf "%s frame at %s" .Format ($.Rel .TimeNs))}}<figcaption><b>{{$.Rel .TimeNs}}</b>{{if .Trigger}} · {{.Side}} trigger {{.Trigger}}{{end}} · {{.Width}}×{{.Height}} {{.Format}}</figcaption></figure>{{else}}<figure{{if .Trigger}} class="at"{{end}}><div class="ph">{{.Missing}}</div><figcaption><b>{{$.Rel .TargetNs}}</b>{{if .Trigger}} · {{.Side}} trigger {{.Trigger}}{{end}} · no picture</figcaption></figure>{{end}}{{end}}</div>
{{end}}{{else}}<p class="sub">No camera topics (foxglove.CompressedImage or foxglove.CompressedVideo).</p>
{{end}}
<h2 id="timing">Timing</h2>
<table>
<tr><th>topic</th><th class="n">messages</th><th class="n">rate</th><th class="n">interval p50</th><th class="n">p99</th><th class="n">max</th><th class="n">jitter p50</th><th class="n">p99</th><th class="n">max</th><th class="n">latency p50</th><th class="n">p99</th><th class="n">max</th><th class="n">out of order</th><th class="n">largest gap</th><th>at</th></tr>
{{range .R.Topics}}{{$t := .Timing}}<tr><td class="t">{{.Name}}</td><td class="n">{{.Messages}}</td><td class="n">{{hz $t.RateHz}}</td>
{{if $t.Interval.Count}}<td class="n">{{dur $t.Interval.P50}}</td><td class="n">{{dur $t.Interval.P99}}</td><td class="n">{{dur $t.Interval.Max}}</td><td class="n">{{dur $t.Jitter.P50}}</td><td class="n">{{dur $t.Jitter.P99}}</td><td class="n">{{dur $t.Jitter.Max}}</td>{{else}}<td class="n">-</td><td class="n">-</td><td class="n">-</td><td class="n">-</td><td class="n">-</td><td class="n">-</td>{{end}}
{{if $t.Latency.Count}}<td class="n">{{dur $t.Latency.P50}}</td><td class="n">{{dur $t.Latency.P99}}</td><td class="n">{{dur $t.Latency.Max}}</td>{{else}}<td class="n">-</td><td class="n">-</td><td class="n">-</td>{{end}}
<td class="n{{if or $t.OutOfOrder $t.CaptureBackwards}} bad{{end}}">{{$t.OutOfOrder}}{{if $t.CaptureBackwards}} (+{{$t.CaptureBackwards}} capture){{end}}</td><td class="n">{{if $t.LargestGapNs}}{{dur $t.LargestGapNs}}{{else}}-{{end}}</td><td class="t">{{if $t.LargestGapNs}}{{$.Rel $t.LargestGapAtNs}}{{end}}</td></tr>
{{end}}</table>
<p class="sub">Interval: time between consecutive capture times. Jitter: |interval − median interval|. Latency: capture time − producer time. Out of order: producer time earlier than the previous message's.</p>

<h2 id="accounting">Accounting</h2>
<table>
<tr><th>topic</th><th class="n">messages</th><th class="n">bytes</th><th class="n">overwritten</th><th class="n">lost at source</th><th class="n">oversize</th><th class="n">skipped busy</th><th>type</th><th>decoded</th></tr>
{{range .R.Topics}}{{$a := .Accounting}}<tr><td class="t">{{.Name}}</td><td class="n">{{$a.Messages}}</td><td class="n">{{size $a.Bytes}}</td><td class="n{{if $a.Overwritten}} bad{{end}}">{{$a.Overwritten}}</td><td class="n{{if $a.LostAtSource}} bad{{end}}">{{$a.LostAtSource}}</td><td class="n{{if $a.Oversize}} bad{{end}}">{{$a.Oversize}}</td><td class="n{{if $a.SkippedBusy}} bad{{end}}">{{$a.SkippedBusy}}</td><td class="t">{{.Type}}{{if $a.Labels}} ({{join $a.Labels ", "}}){{end}}</td><td>{{.Decoded}}</td></tr>
{{end}}</table>

{{if .R.Files}}<h2 id="files">Files</h2>
<table>
<tr><th>file</th><th>format</th><th class="n">size</th><th class="n">messages</th><th>compression</th><th class="n">codec ratio</th><th>indexed</th><th>writer</th><th>verify</th></tr>
{{range .R.Files}}<tr><td class="t">{{.Path}}</td><td>{{.Format}}</td><td class="n">{{size .Size}}</td><td class="n">{{.Messages}}</td><td>{{join .Compression ", "}}</td><td class="n">{{ratio .}}</td><td>{{if .Indexed}}yes{{else}}no{{end}}</td><td>{{.Writer}}</td><td class="{{if eq .Verify "ok"}}ok{{else if eq .Verify "not checked"}}{{else}}bad{{end}}">{{.Verify}}{{range .Problems}}<br>{{.}}{{end}}</td></tr>
{{end}}</table>
{{end}}
{{if .R.Notes}}<h2 id="notes">Notes</h2>
<ul class="notes">{{range .R.Notes}}<li>{{.}}</li>
{{end}}</ul>
{{end}}
<footer>edr-lite report · docs/report.md says how each section is computed. Charts drawn with uPlot (MIT licence, inlined).</footer>
{{if .Signals}}<script type="application/json" id="edr-chart-data">{{.ChartData}}</script>
<script>{{.UPlotJS}}</script>
<script>{{.ChartJS}}</script>
{{end}}</body>
</html>
`

// triggerWindow says the window a trigger selected (its effective window,
// dumpinfo.Trigger.Window) relative to its time, "−3s … +2s", with the
// pre / post it set as overrides of the topics' windows.
func triggerWindow(t dumpinfo.Trigger) string {
	var b strings.Builder
	if _, _, pre, post, ok := t.Window(); ok {
		fmt.Fprintf(&b, "−%s … +%s", fmtDur(pre), fmtDur(post))
	} else {
		b.WriteString("not recorded")
	}
	var set []string
	if v, ok := t.Pre(); ok {
		set = append(set, "pre "+fmtDur(v))
	}
	if v, ok := t.Post(); ok {
		set = append(set, "post "+fmtDur(v))
	}
	if len(set) > 0 {
		fmt.Fprintf(&b, " (override: %s)", strings.Join(set, ", "))
	}
	return b.String()
}
