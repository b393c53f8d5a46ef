package pgregistry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/idsauth/idsauth/issuer"
)

// A registration is stored as the configuration file's JSON of a client
// (or an API resource), without its ID and its secret hashes, which have
// columns of their own: the issuer's own shape, read by the issuer's own
// decoder, so that a field the issuer learns comes along without a
// column of its own.

// AdminScope is the scope of the tokens the administration API admits.
// The issuer's configuration must allow it (Config.Scopes), and only the
// file's clients may hold it: the API refuses a registered client that
// asks for it, and the registry leaves out one written otherwise, so
// that the API cannot make an administrator the file does not name.
const AdminScope = "idsauth_admin"

// kind is a kind of registration: its name in the table, the file's
// member that lists them, the member that names one, and its path in the
// administration API.
type kind struct {
	name   string // "client" or "api"
	list   string // "clients" or "apiResources"
	idName string // "clientId" or "name"
	path   string // "clients" or "apiresources"
}

var (
	clientKind = kind{name: "client", list: "clients", idName: "clientId", path: "clients"}
	apiKind    = kind{name: "api", list: "apiResources", idName: "name", path: "apiresources"}
)

// kindOf is the kind of API resources when api, else of clients.
func kindOf(api bool) kind {
	if api {
		return apiKind
	}
	return clientKind
}

// row is a registration as stored.
type row struct {
	id     string
	config []byte
	hashes []string
	epoch  uint64 // the column's bigint; a negative one (by hand) as uint64, out of range
}

// decodeRows decodes rows of kind k into the issuer's types, as the file
// does, with their IDs and hashes: a client each (k is clientKind) or an
// API resource each; bad holds the error of each row that cannot be.
func decodeRows(k kind, rows []row) (clients []issuer.ClientConfig, apis []issuer.APIResourceConfig, bad []error) {
	return decodeList(k, rowList{rows: rows})
}

// decodeList is decodeRows of l's rows, from l's document when it has
// one.
func decodeList(k kind, l rowList) (clients []issuer.ClientConfig, apis []issuer.APIResourceConfig, bad []error) {
	// One document for them all, decoded once; row by row only when it
	// fails, to find the ones that do.
	doc, err := l.doc, error(nil)
	if doc == nil || l.odd {
		doc, err = listOf(k, l.rows)
	}
	if err == nil {
		if cfg, err := issuer.ParseConfig(doc, "", nil); err == nil {
			return fill(k, cfg, l.rows, nil)
		}
	}
	var good []row
	for _, r := range l.rows {
		if _, err := parseList(k, []row{r}); err != nil {
			bad = append(bad, k.leftOut(r.id, "", err))
			continue
		}
		good = append(good, r)
	}
	cfg, err := parseList(k, good)
	if err != nil { // each decoded alone
		return nil, nil, append(bad, err)
	}
	return fill(k, cfg, good, bad)
}

// rowList is rows of one kind, as a load reads them, and the file's list
// of them (listOf's) written as they are read, so that no row's
// configuration is copied but into it.
type rowList struct {
	rows []row
	doc  []byte // the list; nil: none written (decodeList writes it)
	ends []int  // where each row's configuration ends in doc
	odd  bool   // a configuration is not an object: no list of them
}

// grow makes room in the list of kind k for n more rows whose
// configurations hold size bytes.
func (l *rowList) grow(k kind, n, size int) {
	l.start(k, size+n+2)
	l.doc = slices.Grow(l.doc, size+n+2)
	l.ends = slices.Grow(l.ends, n)
	l.rows = slices.Grow(l.rows, n)
}

// start begins the list of kind k, with room for size bytes, unless it
// has begun.
func (l *rowList) start(k kind, size int) {
	if l.doc == nil {
		l.doc = append(make([]byte, 0, len(k.list)+6+size), `{"`+k.list+`":[`...)
	}
}

// add appends rw, of the configuration config (which it copies), to the
// list of kind k.
func (l *rowList) add(k kind, rw row, config []byte) {
	l.start(k, 2*len(config))
	if len(l.ends) > 0 {
		l.doc = append(l.doc, ',')
	}
	l.odd = l.odd || !isStoredObject(config)
	l.doc = append(double(l.doc, len(config)), config...)
	l.ends = append(double(l.ends, 1), len(l.doc))
	l.rows = append(double(l.rows, 1), rw)
}

// double returns s with room for n more, its capacity doubled when it
// has not: append grows a large slice by a quarter at a time, and a load
// of 100,000 rows would make five times their bytes in garbage.
func double[S ~[]E, E any](s S, n int) S {
	if cap(s)-len(s) >= n {
		return s
	}
	return slices.Grow(s, max(n, len(s)))
}

// close ends the list, and points each row's configuration into it.
func (l *rowList) close() {
	if l.doc == nil {
		return
	}
	l.doc = append(l.doc, "]}"...)
	start := bytes.IndexByte(l.doc, '[') + 1
	for i, end := range l.ends {
		l.rows[i].config = l.doc[start:end:end]
		start = end + 1
	}
	l.ends = nil
}

// leftOut is the error of registration id of kind k, left out for err:
// field names its field ("" when err, an *issuer.ConfigError of the file,
// names it as in a list of one).
func (k kind) leftOut(id, field string, err error) *issuer.RegistrationError {
	at := fmt.Sprintf("%s (%q)", k.list, id)
	var ce *issuer.ConfigError
	switch {
	case field != "":
		ce = &issuer.ConfigError{Field: at + "." + field, Reason: err.Error(), Err: err}
	case errors.As(err, &ce):
		// As the file names a field of its list's first: clients[0].scopes.
		f := strings.TrimPrefix(strings.TrimPrefix(ce.Field, k.list+"[0]"), ".")
		ce = &issuer.ConfigError{Field: strings.TrimSuffix(at+"."+f, "."), Reason: ce.Reason, Err: ce.Err}
	default:
		ce = &issuer.ConfigError{Field: at, Reason: err.Error(), Err: err}
	}
	return &issuer.RegistrationError{API: k == apiKind, ID: id, Err: ce}
}

// withoutAdmins returns clients and apis without those that hold
// AdminScope, and the error of each left out: only the configuration
// file names who administers the registry, and an API resource of the
// scope would be told of the administrators' tokens. The rule of the
// administration API and of every load alike.
func withoutAdmins(clients []issuer.ClientConfig, apis []issuer.APIResourceConfig) ([]issuer.ClientConfig, []issuer.APIResourceConfig, []error) {
	var left []error
	admin := func(k kind, id string, scopes []string) bool {
		if i := slices.Index(scopes, AdminScope); i >= 0 {
			left = append(left, k.leftOut(id, fmt.Sprintf("scopes[%d]", i), errAdminScope))
			return true
		}
		return false
	}
	// By index: slices.DeleteFunc hands each ClientConfig (384 bytes) to
	// its function by value, 100,000 copies in a load.
	n := 0
	for i := range clients {
		if admin(clientKind, clients[i].ClientID, clients[i].Scopes) {
			continue
		}
		if n != i {
			clients[n] = clients[i]
		}
		n++
	}
	clear(clients[n:])
	clients = clients[:n]
	apis = slices.DeleteFunc(apis, func(ac issuer.APIResourceConfig) bool { return admin(apiKind, ac.Name, ac.Scopes) })
	return clients, apis, left
}

// errAdminScope is why a registration that holds AdminScope is refused.
var errAdminScope = errors.New(AdminScope + ": only the configuration file names who administers the registry, and what may introspect its tokens")

// parseList decodes rows as the file's list of kind k.
func parseList(k kind, rows []row) (*issuer.Config, error) {
	doc, err := listOf(k, rows)
	if err != nil {
		return nil, err
	}
	return issuer.ParseConfig(doc, "", nil)
}

// listOf returns rows as the file's list of kind k: their configurations,
// each an object, in one document, written as a load writes its rowList.
func listOf(k kind, rows []row) ([]byte, error) {
	size := 0
	for _, r := range rows {
		size += len(r.config)
	}
	var l rowList
	l.grow(k, len(rows), size)
	for _, r := range rows {
		l.add(k, r, r.config)
	}
	if l.odd {
		return nil, errors.New("the stored configuration is not one JSON object")
	}
	l.close()
	return l.doc, nil
}

func fill(k kind, cfg *issuer.Config, rows []row, bad []error) ([]issuer.ClientConfig, []issuer.APIResourceConfig, []error) {
	if k == clientKind {
		for i := range cfg.Clients {
			cfg.Clients[i].ClientID, cfg.Clients[i].SecretHashes, cfg.Clients[i].Epoch = rows[i].id, rows[i].hashes, rows[i].epoch
		}
		return cfg.Clients, nil, bad
	}
	for i := range cfg.APIResources {
		cfg.APIResources[i].Name, cfg.APIResources[i].SecretHashes = rows[i].id, rows[i].hashes
	}
	return nil, cfg.APIResources, bad
}

// isStoredObject reports whether b, a value of the config column, is a
// JSON object: the column's type, json, has PostgreSQL hold it to one
// JSON value, so that its first character says which (and the issuer's
// decoder checks the list they make again, as JSON).
func isStoredObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

// isObject reports whether b is exactly one JSON object: only then may it
// be put in a list by concatenation, for it cannot close the list.
func isObject(b []byte) bool {
	return json.Valid(b) && bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{"))
}

// fieldError is a bad input of the administration API: the field, as the
// file names it within the registration, and why.
type fieldError struct {
	field, reason string
	status        int // 400, or 409 for a clash
}

func (e *fieldError) Error() string { return e.field + ": " + e.reason }

func badField(field, format string, args ...any) *fieldError {
	return &fieldError{field: field, reason: fmt.Sprintf(format, args...), status: 400}
}

// input is a registration as the administration API receives it.
type input struct {
	id     string
	config []byte   // as stored: without the ID and the secret hashes
	hashes []string // given in the body (create only)
	given  bool     // the body had secretHashes
}

// readInput reads body, the file's JSON of one registration of kind k:
// one object, each member named once (without regard to case, as the
// decoder matches names), its ID and secret hashes taken out.
func readInput(k kind, body []byte) (*input, *fieldError) {
	if !utf8.Valid(body) {
		// encoding/json keeps a value's bytes as they are; the database
		// would refuse them, and that is no outage.
		return nil, badField("(body)", "not UTF-8")
	}
	if !isObject(body) {
		return nil, badField("(body)", "want one JSON object, the configuration file's %s entry", k.list)
	}
	var members map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&members); err != nil {
		return nil, badField("(body)", "%v", err)
	}
	// encoding/json keeps the last of a name given twice, as the file's
	// decoder does; names that differ only by case would be kept apart
	// here and not there.
	if names := namesOf(body); len(names) != len(members) || hasFoldDuplicate(names) {
		return nil, badField("(body)", "a member is named twice")
	}
	in := &input{}
	for name, v := range members {
		switch {
		case strings.EqualFold(name, k.idName):
			if err := json.Unmarshal(v, &in.id); err != nil {
				return nil, badField(k.idName, "want a string")
			}
			delete(members, name)
		case strings.EqualFold(name, "secretHashes"):
			if err := json.Unmarshal(v, &in.hashes); err != nil {
				return nil, badField("secretHashes", "want an array of strings")
			}
			in.given = true
			delete(members, name)
		}
	}
	config, err := json.Marshal(members)
	if err != nil {
		return nil, badField("(body)", "%v", err)
	}
	in.config = config
	return in, nil
}

// namesOf returns the member names of the object b, in order, with
// repeats.
func namesOf(b []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(b))
	_, _ = dec.Token() // {
	var names []string
	for dec.More() {
		t, _ := dec.Token()
		name, _ := t.(string)
		names = append(names, name)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
	}
	return names
}

// hasFoldDuplicate reports whether two of names are one under
// strings.EqualFold, as the file's decoder matches member names: Unicode
// simple folding, under which "ſcopes" (a long s) is "scopes", not
// lower case alone.
func hasFoldDuplicate(names []string) bool {
	keys := make([]string, len(names))
	for i, n := range names {
		keys[i] = foldKey(n)
	}
	slices.Sort(keys)
	return len(slices.Compact(keys)) != len(names)
}

// foldKey returns name with each rune replaced by the least of its
// simple case folding orbit: strings.EqualFold holds for two names
// exactly when their keys are equal.
func foldKey(name string) string {
	var b strings.Builder
	for _, r := range name {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// check decodes in as it will be loaded, with hashes as its secret
// hashes, and checks it against the issuer's configuration and the
// registry's rules, as a load would: a bad field is a *fieldError, a
// clash with a file's client 409.
func (r *Registry) check(k kind, in *input, hashes []string) *fieldError {
	for i, h := range hashes {
		if strings.HasPrefix(h, "bcrypt:") {
			return badField(fmt.Sprintf("secretHashes[%d]", i), "a registered secret's hash is sha256 or sha512: the registry reloads its clients on every change, and a bcrypt hash costs a login each time (idsauth hash-secret makes a sha256 one)")
		}
	}
	clients, apis, left := decodeRows(k, []row{{id: in.id, config: in.config, hashes: hashes}})
	clients, apis, admins := withoutAdmins(clients, apis)
	left = append(left, admins...)
	if len(left) == 0 {
		left = unjoin(r.iss.CheckRegistered(clients, apis))
	}
	if len(left) == 0 {
		return nil
	}
	var re *issuer.RegistrationError
	if !errors.As(left[0], &re) {
		return badField("(body)", "%v", left[0])
	}
	field := strings.TrimPrefix(strings.TrimPrefix(re.Err.Field, fmt.Sprintf("%s (%q)", k.list, in.id)), ".")
	if field == "" {
		field = "(body)" // an unknown member, say: the reason names it
	}
	fe := badField(field, "%s", re.Err.Reason)
	if re.Taken {
		fe.status = http.StatusConflict
	}
	return fe
}
