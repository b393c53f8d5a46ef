package main

import (
	"bytes"
	"encoding/json"
	"html/template"
	"net/http"
	ttemplate "text/template"
)

// The Connect API: generate a small document from a template and JSON data.

var (
	textTemplates = map[string]*ttemplate.Template{
		"welcome": ttemplate.Must(ttemplate.New("welcome").Parse("Dear {{.name}},\n\nwelcome to {{.company}}.\n")),
		"invoice": ttemplate.Must(ttemplate.New("invoice").Parse("Invoice {{.number}} for {{.name}}: {{.amount}} due.\n")),
	}
	htmlTemplates = map[string]*template.Template{
		"welcome": template.Must(template.New("welcome").Parse("<!doctype html><p>Dear {{.name}},</p><p>welcome to {{.company}}.</p>\n")),
		"invoice": template.Must(template.New("invoice").Parse("<!doctype html><p>Invoice {{.number}} for {{.name}}: {{.amount}} due.</p>\n")),
	}
)

type documentRequest struct {
	Template string         `json:"template"`
	Format   string         `json:"format"` // "text" (default) or "html"
	Data     map[string]any `json:"data"`
}

func (s *service) generateDocument(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.admin.users[r.PathValue("datasourceId")]; !ok {
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
	var (
		out bytes.Buffer
		err error
	)
	switch req.Format {
	case "", "text":
		t, ok := textTemplates[req.Template]
		if !ok {
			problem(w, http.StatusBadRequest, `unknown template; try "welcome" or "invoice"`)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		err = t.Option("missingkey=zero").Execute(&out, req.Data)
	case "html":
		t, ok := htmlTemplates[req.Template]
		if !ok {
			problem(w, http.StatusBadRequest, `unknown template; try "welcome" or "invoice"`)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		err = t.Option("missingkey=zero").Execute(&out, req.Data)
	default:
		problem(w, http.StatusBadRequest, `format must be "text" or "html"`)
		return
	}
	if err != nil {
		w.Header().Del("Content-Type")
		problem(w, http.StatusBadRequest, "the data does not fit the template")
		return
	}
	_, _ = w.Write(out.Bytes())
}
