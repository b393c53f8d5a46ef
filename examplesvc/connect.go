package main

import (
	"bytes"
	"encoding/json"
	htemplate "html/template"
	"io"
	"net/http"
	ttemplate "text/template"
)

// The Connect API: generate a small document from a template and JSON data.

// template is what text/template and html/template have in common.
type template interface {
	Execute(w io.Writer, data any) error
}

// renderings maps a format to its content type and templates.
var renderings = map[string]struct {
	contentType string
	templates   map[string]template
}{
	"text": {"text/plain; charset=utf-8", map[string]template{
		"welcome": ttemplate.Must(ttemplate.New("welcome").Option("missingkey=zero").Parse("Dear {{.name}},\n\nwelcome to {{.company}}.\n")),
		"invoice": ttemplate.Must(ttemplate.New("invoice").Option("missingkey=zero").Parse("Invoice {{.number}} for {{.name}}: {{.amount}} due.\n")),
	}},
	"html": {"text/html; charset=utf-8", map[string]template{
		"welcome": htemplate.Must(htemplate.New("welcome").Option("missingkey=zero").Parse("<!doctype html><p>Dear {{.name}},</p><p>welcome to {{.company}}.</p>\n")),
		"invoice": htemplate.Must(htemplate.New("invoice").Option("missingkey=zero").Parse("<!doctype html><p>Invoice {{.number}} for {{.name}}: {{.amount}} due.</p>\n")),
	}},
}

type documentRequest struct {
	Template string         `json:"template"`
	Format   string         `json:"format"` // "text" (default) or "html"
	Data     map[string]any `json:"data"`
}

func (s *service) generateDocument(w http.ResponseWriter, r *http.Request) {
	if !s.admin.hasDataSource(r.PathValue("datasourceId")) {
		problem(w, http.StatusNotFound, "unknown data source")
		return
	}
	var req documentRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		problem(w, http.StatusBadRequest, "the body must be a JSON object with template, format and data")
		return
	}
	if req.Format == "" {
		req.Format = "text"
	}
	rendering, ok := renderings[req.Format]
	if !ok {
		problem(w, http.StatusBadRequest, `format must be "text" or "html"`)
		return
	}
	t, ok := rendering.templates[req.Template]
	if !ok {
		problem(w, http.StatusBadRequest, `unknown template; try "welcome" or "invoice"`)
		return
	}
	var out bytes.Buffer
	if err := t.Execute(&out, req.Data); err != nil {
		problem(w, http.StatusBadRequest, "the data does not fit the template")
		return
	}
	w.Header().Set("Content-Type", rendering.contentType)
	_, _ = w.Write(out.Bytes())
}
