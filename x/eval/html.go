package eval

import (
	"fmt"
	"html/template"
	"io"
)

// The page is html/template's, so every value a model or tool wrote is
// escaped as text; the Content-Security-Policy allows no script at all,
// so even markup that got through could not run.
var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"inc":   func(i int) int { return i + 1 },
	"money": func(v float64) string { return fmt.Sprintf("$%.4f", v) },
	"score": func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"ms":    func(v float64) string { return fmt.Sprintf("%.1f ms", v) },
	"str":   func(b []byte) string { return string(b) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>{{.Suite}} — lode eval</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left;vertical-align:top}
.pass{color:#176d1b}.fail{color:#b3261e}.skip{color:#777}
section.case{border-top:2px solid #ddd;margin-top:2em;padding-top:.5em}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:.5em;margin:.2em 0}
.role{font-weight:600;width:7em}
</style>
</head>
<body>
<h1 id="suite">{{.Suite}}</h1>
<table id="summary">
<tr><th>case</th><th>model</th><th>status</th><th>score</th><th>turns</th><th>calls</th><th>tokens</th><th>cost</th><th>time</th></tr>
{{range $i, $c := .Cases}}<tr><td><a href="#case-{{inc $i}}">{{$c.Name}}</a></td><td>{{$c.Model}}</td><td class="{{$c.Status}}">{{$c.Status}}</td><td>{{score $c.Score}}</td><td>{{$c.Turns}}</td><td>{{len $c.Calls}}</td><td>{{$c.Tokens}}</td><td>{{money $c.CostUSD}}</td><td>{{ms $c.DurationMS}}</td></tr>
{{end}}</table>
{{range $i, $c := .Cases}}
<section class="case" id="case-{{inc $i}}" data-status="{{$c.Status}}">
<h2>{{$c.Name}} <span class="{{$c.Status}}">{{$c.Status}}</span></h2>
{{if $c.Skip}}<p class="skip">skipped: {{$c.Skip}}</p>{{end}}
{{if $c.Failures}}<h3>Failures</h3><ul class="failures">{{range $c.Failures}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if $c.Expectations}}<h3>Expectations</h3><ul class="expectations">{{range $c.Expectations}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if $c.Scores}}<h3>Scores</h3><table class="scores"><tr><th>scorer</th><th>score</th><th>pass</th><th>reason</th></tr>
{{range $c.Scores}}<tr><td>{{.Name}}</td><td>{{score .Value}}</td><td>{{.Pass}}</td><td>{{.Reason}}</td></tr>{{end}}</table>{{end}}
{{if $c.Calls}}<h3>Tool calls</h3><table class="calls"><tr><th>#</th><th>tool</th><th>arguments</th><th>result</th></tr>
{{range $j, $k := $c.Calls}}<tr><td>{{inc $j}}</td><td>{{$k.Name}}{{if $k.Refused}} <span class="fail">refused ({{$k.Rule}})</span>{{end}}</td><td><pre>{{$k.Arguments}}</pre></td><td><pre{{if $k.IsError}} class="fail"{{end}}>{{$k.Result}}</pre></td></tr>
{{end}}</table>{{end}}
{{if $c.Answer}}<h3>Typed answer</h3><pre class="answer">{{str $c.Answer}}</pre>{{end}}
{{if $c.Error}}<h3>Error</h3><pre class="error">{{$c.Error}}</pre>{{end}}
<h3>Transcript</h3>
<table class="transcript">
{{range $c.Transcript}}<tr><td class="role">{{.Role}} {{.Kind}}</td><td><pre>{{.Text}}</pre></td></tr>
{{end}}</table>
</section>
{{end}}
</body>
</html>
`))

// WriteHTML writes the report as one HTML page: a summary table, then one
// section per case with its failures, scores, tool calls and transcript.
func (r *Report) WriteHTML(w io.Writer) error { return page.Execute(w, r) }
