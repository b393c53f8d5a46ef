package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/idsauth/idsauth/internal/kit"
)

const conformanceAbout = `Run the contract's tables (the ones idsauthtest runs in process) against
anything running, over HTTP, and report each case: passed, FAILED with
what was wrong, or skipped with the reason the runner could not run it.

  token-endpoint   the issuer's token endpoint: RFC 6749 §5.2 errors as
                   -profile (rfc or identityserver) writes them, RFC 9068
                   tokens, introspection (RFC 7662) and revocation
                   (RFC 7009) where discovery names them, DPoP and mutual
                   TLS where offered
  resource -url U  a protected API: missing, malformed, expired, foreign,
                   wrong-audience, wrong-scope and right tokens, reference
                   tokens, DPoP and certificate-bound tokens where the
                   route takes them, its RFC 9728 metadata
  gate -url U      the same through a proxy that asks idsauth gate (or any
                   gate), and what a gate adds: forwarding headers of the
                   client's own, and the route's path written other ways

Each case says how its token was obtained: the good ones from -issuer with
the client's credentials (idsauth token's flags; the secret from
IDSAUTH_CLIENT_SECRET, -secret-file or -secret-env), and those a client
cannot make an issuer sign (expired, of another issuer, ...) forged with a
key of the runner's own, which the API must refuse all the same. A table
for people, -json for machines, -junit FILE for CI. Exit status: 0 when
every case that ran passed, 1 when one failed, 2 when the run could not
happen (a usage error, an issuer or API that does not answer, no token).`

func conformanceCommand(ctx context.Context, e env, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fs := flags(e, "conformance", "token-endpoint|resource|gate [flags]", conformanceAbout)
		if err := parse(fs, args); err != nil {
			return err
		}
		fs.Usage()
		return usagef("name what to check: token-endpoint, resource or gate")
	}
	switch args[0] {
	case "token-endpoint", "resource", "gate":
		return runConformance(ctx, e, args[0], args[1:])
	}
	return usagef("conformance %q: want token-endpoint, resource or gate", args[0])
}

// conformanceFlags are a run's.
type conformanceFlags struct {
	credentialFlags
	target, method, otherScope, profile, junit string
	json                                       bool
}

// runConformance runs one kind of check and reports it.
func runConformance(ctx context.Context, e env, kind string, args []string) error {
	fs := flags(e, "conformance "+kind, "[flags]", conformanceAbout)
	var f conformanceFlags
	f.register(fs)
	if kind != "token-endpoint" {
		fs.StringVar(&f.target, "url", "", "the protected URL to call (required): the route's, through the proxy for gate")
		fs.StringVar(&f.method, "method", "GET", "the method of the route")
	} else {
		fs.StringVar(&f.profile, "profile", "rfc", "the token endpoint's profile: rfc or identityserver (docs/CONTRACT.md §2.1)")
	}
	fs.StringVar(&f.otherScope, "other-scope", "", "a scope of the client's that the route does not take (default: one of the issuer's scopes_supported it grants)")
	fs.BoolVar(&f.json, "json", false, "print the report as JSON")
	fs.StringVar(&f.junit, "junit", "", "also write the report as JUnit XML to this file")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	case kind != "token-endpoint" && f.target == "":
		return usagef("-url is required: the protected URL to call")
	case kind != "token-endpoint" && f.scopes == "":
		return usagef("-scope is required: the scopes the route needs")
	case kind == "token-endpoint" && f.profile != "rfc" && f.profile != "identityserver":
		return usagef("-profile %q: want rfc or identityserver", f.profile)
	}
	cfg, err := f.config(e)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 4*f.timeout)
	defer cancel()
	var rep *report
	if kind == "token-endpoint" {
		rep, err = runTokenEndpoint(ctx, f, cfg)
	} else {
		rep, err = runResource(ctx, f, cfg, kind == "gate")
	}
	if err != nil {
		var ue *usageError
		if errors.As(err, &ue) {
			return err
		}
		return &cannotRun{err}
	}
	rep.Kind = kind
	if f.junit != "" {
		if err := rep.writeJUnit(f.junit); err != nil {
			return &cannotRun{err}
		}
	}
	if f.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		rep.print(e.stdout)
	}
	if rep.Failed > 0 {
		return fmt.Errorf("%d of %d cases failed", rep.Failed, len(rep.Cases))
	}
	return nil
}

// cannotRun is a run that could not happen: exit status 2.
type cannotRun struct{ err error }

func (c *cannotRun) Error() string { return "the run could not happen: " + c.err.Error() }
func (c *cannotRun) Unwrap() error { return c.err }

// report is a run's outcome.
type report struct {
	Kind    string       `json:"kind"`
	Target  string       `json:"target"`
	Cases   []caseReport `json:"cases"`
	Passed  int          `json:"passed"`
	Failed  int          `json:"failed"`
	Skipped int          `json:"skipped"`
}

// caseReport is a case as run.
type caseReport struct {
	Table    string   `json:"table"`
	Name     string   `json:"name"`
	Result   string   `json:"result"` // "pass", "fail" or "skip"
	Source   string   `json:"tokenSource,omitempty"`
	Skipped  string   `json:"skipped,omitempty"`
	Problems []string `json:"problems,omitempty"`
}

// add runs cases with s as table, and adds them.
func (r *report) add(table string, s kit.Sender, cases []kit.Case) {
	for _, res := range kit.Run(s, cases) {
		c := caseReport{Table: table, Name: res.Name, Source: res.Source, Skipped: res.Skipped, Problems: res.Problems}
		switch {
		case res.Skipped != "":
			c.Result = "skip"
			r.Skipped++
		case len(res.Problems) > 0:
			c.Result = "fail"
			r.Failed++
		default:
			c.Result = "pass"
			r.Passed++
		}
		r.Cases = append(r.Cases, c)
	}
}

// print writes the report as a table for people.
func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "idsauth conformance %s %s\n\n", r.Kind, r.Target)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESULT\tTABLE\tCASE\tTOKEN")
	for _, c := range r.Cases {
		result := map[string]string{"pass": "pass", "fail": "FAIL", "skip": "skip"}[c.Result]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", result, c.Table, c.Name, c.Source)
	}
	tw.Flush()
	for _, c := range r.Cases {
		switch c.Result {
		case "fail":
			fmt.Fprintf(w, "\nFAIL %s: %s\n", c.Table, c.Name)
			for _, p := range c.Problems {
				fmt.Fprintf(w, "    %s\n", p)
			}
		case "skip":
			fmt.Fprintf(w, "\nskip %s: %s\n    %s\n", c.Table, c.Name, c.Skipped)
		}
	}
	fmt.Fprintf(w, "\n%d passed, %d failed, %d skipped\n", r.Passed, r.Failed, r.Skipped)
}

// writeJUnit writes the report as JUnit XML, a test suite per table.
func (r *report) writeJUnit(file string) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	type skipped struct {
		Message string `xml:"message,attr"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		Skipped   *skipped `xml:"skipped,omitempty"`
	}
	type suite struct {
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Skipped  int        `xml:"skipped,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	var suites []*suite
	byTable := map[string]*suite{}
	for _, c := range r.Cases {
		s := byTable[c.Table]
		if s == nil {
			s = &suite{Name: "idsauth conformance " + r.Kind + " " + c.Table}
			byTable[c.Table] = s
			suites = append(suites, s)
		}
		tc := testcase{Name: c.Name, Classname: "idsauth.conformance." + r.Kind + "." + c.Table}
		switch c.Result {
		case "fail":
			tc.Failure = &failure{Message: c.Problems[0], Text: strings.Join(c.Problems, "\n")}
			s.Failures++
		case "skip":
			tc.Skipped = &skipped{Message: c.Skipped}
			s.Skipped++
		}
		s.Tests++
		s.Cases = append(s.Cases, tc)
	}
	out, err := xml.MarshalIndent(struct {
		XMLName xml.Name `xml:"testsuites"`
		Suites  []*suite `xml:"testsuite"`
	}{Suites: suites}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append([]byte(xml.Header), append(out, '\n')...), 0o644)
}

// apiClient returns, for a case, the client that presents cert to the
// API, trusting -cacert like the issuer's client.
func apiClient(base *http.Client) func(cert *tls.Certificate) *http.Client {
	return func(cert *tls.Certificate) *http.Client {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if t, ok := base.Transport.(*http.Transport); ok && t.TLSClientConfig != nil {
			tr.TLSClientConfig = t.TLSClientConfig.Clone()
		}
		if cert != nil {
			if tr.TLSClientConfig == nil {
				tr.TLSClientConfig = &tls.Config{}
			}
			tr.TLSClientConfig.Certificates = []tls.Certificate{*cert}
		}
		return &http.Client{Transport: tr, Timeout: base.Timeout}
	}
}

// splitTarget is the origin of the URL and the route of method to it.
func splitTarget(target, method string) (origin, route string, err error) {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" {
		return "", "", usagef("-url %q: want an http(s) URL", target)
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	return u.Scheme + "://" + u.Host, method + " " + path, nil
}
