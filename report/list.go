package report

import (
	"html/template"
	"io"
	"strings"
	"sync"
)

// ListItem is one dump of a dump list page.
type ListItem struct {
	Href      string // the report's link, relative to the list page
	Name      string
	Size      int64
	TriggerNs int64    // first trigger, 0 when none
	Reasons   []string // trigger reasons
	Messages  uint64
	Err       string // the dump could not be summarised
}

// WriteListHTML writes a page listing dumps with links to their reports
// (the daemon's /dumps/), styled as the reports, nothing external.
func WriteListHTML(w io.Writer, title string, items []ListItem, nav []NavLink) error {
	return listTmpl().Execute(w, struct {
		Title string
		Items []ListItem
		Nav   []NavLink
	}{title, items, nav})
}

// listTmpl is parsed on first use (see pageTmpl).
var listTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("list").Funcs(funcs).Funcs(template.FuncMap{"joinReasons": func(r []string) string {
		return strings.Join(r, ", ")
	}}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { margin: 0 auto; padding: 16px 24px 48px; max-width: 1100px; color: #1d2330;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
h1 { font-size: 22px; }
nav a { margin-right: 12px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { padding: 4px 10px; border-bottom: 1px solid #d6dae2; text-align: left; }
th { background: #f5f7fa; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.t { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12px; }
.bad { color: #b00020; }
</style>
</head>
<body>
{{if .Nav}}<nav>{{range .Nav}}<a href="{{.Href}}">{{.Text}}</a>{{end}}</nav>
{{end}}<h1>{{.Title}}</h1>
{{if .Items}}<table>
<tr><th>trigger time (UTC)</th><th>reasons</th><th class="n">size</th><th class="n">messages</th><th>report</th><th>data</th></tr>
{{range .Items}}<tr><td class="t">{{time .TriggerNs}}</td><td>{{joinReasons .Reasons}}{{if .Err}}<span class="bad">{{.Err}}</span>{{end}}</td><td class="n">{{size .Size}}</td><td class="n">{{.Messages}}</td><td class="t"><a href="{{.Href}}">{{.Name}}</a></td><td><a href="{{.Href}}?format=json">json</a></td></tr>
{{end}}</table>
{{else}}<p>No dumps yet.</p>
{{end}}</body>
</html>
`))
})
