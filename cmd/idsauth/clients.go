package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/pgregistry"
)

// adminSecretEnv is the environment variable clients reads the
// administrator's secret from when it is set.
const adminSecretEnv = "IDSAUTH_ADMIN_SECRET"

const clientsAbout = `Manage the clients registered in the client registry (serve's clientStore
section) through the issuer's administration API, as an administrator: a
client of the configuration file with the scope idsauth_admin and the
audience ISSUER/admin, whose secret is read from -secret-file, else the
environment variable named by -secret-env (by default ` + adminSecretEnv + `,
if set), else the terminal; or that signs with -key.

  list                         every registered client
  show ID                      one, as JSON
  add ID -scope S [...]        register a client; prints its new secret, once
                               (one given a certificate or keys gets none,
                               unless -generate-secret)
  update ID -json FILE         replace its configuration (not its secrets)
  disable ID | enable ID       refuse it on every replica, or serve it again
  remove ID                    delete it
  rotate-secret ID             a new secret, printed once; the newest old one
                               still works until the next rotation
                               (-drop-previous: at once, no other)

With -api, the same for API resources. A change is in force on the replica
that answered when the command returns, and on every other within a second.`

func clientsCommand(ctx context.Context, e env, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fs := flags(e, "clients", "list|show|add|update|disable|enable|remove|rotate-secret [flags] [ID]", clientsAbout)
		if err := parse(fs, args); err != nil {
			return err
		}
		return usagef("give a verb: list, show, add, update, disable, enable, remove or rotate-secret")
	}
	verb := args[0]
	fs := flags(e, "clients "+verb, "[flags] [ID]", clientsAbout)
	issuerURL := fs.String("issuer", "", "the issuer URL, e.g. https://host/ids (IDSAUTH_ISSUER)")
	adminID := fs.String("admin-id", "", "the administrator's client ID (IDSAUTH_ADMIN_ID)")
	keyFile := fs.String("key", "", "the administrator authenticates with this PEM private key (private_key_jwt)")
	secretFile := fs.String("secret-file", "", "read the administrator's secret from the first line of this file")
	secretEnv := fs.String("secret-env", "", "read the administrator's secret from this environment variable")
	api := fs.Bool("api", false, "manage API resources instead of clients")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	caFile := fs.String("cacert", "", "trust this PEM CA for the issuer's TLS certificate, beside the system's")
	// add's
	scopes := fs.String("scope", "", "add: the scopes the client may ask for, space-separated")
	var audience []string
	fs.Func("audience", "add: an audience of its tokens; repeatable (default: ISSUER/resources)", func(v string) error {
		audience = append(audience, v)
		return nil
	})
	lifetime := fs.Int("lifetime", 0, "add: its tokens' lifetime in seconds (default 3600)")
	reference := fs.Bool("reference", false, "add: its tokens are reference tokens")
	var hashes []string
	fs.Func("secret-hash", "add: keep this hash (sha256: or sha512:, as idsauth hash-secret makes) instead of a new secret, for a client moved from the file; repeatable", func(v string) error {
		hashes = append(hashes, v)
		return nil
	})
	jsonFile := fs.String("json", "", "add, update: the registration as the configuration file's JSON of one client (- for standard input)")
	generate := fs.Bool("generate-secret", false, "add: a new secret beside the credentials given (by default only a client given none gets one)")
	dropPrevious := fs.Bool("drop-previous", false, "rotate-secret: the old secrets stop working at once")
	id, err := parseWithID(fs, args[1:])
	if err != nil {
		return err
	}
	if *issuerURL == "" {
		*issuerURL = e.getenv("IDSAUTH_ISSUER")
	}
	if *adminID == "" {
		*adminID = e.getenv("IDSAUTH_ADMIN_ID")
	}
	switch {
	case *issuerURL == "" || *adminID == "":
		return usagef("-issuer and -admin-id are required")
	case verb == "list" && id != "":
		return usagef("list takes no ID")
	case verb != "list" && id == "":
		return usagef("%s: give the ID", verb)
	case *keyFile != "" && (*secretFile != "" || *secretEnv != ""):
		return usagef("-key or a secret, not both")
	}
	k := clientPaths
	if *api {
		k = apiPaths
	}
	c := &adminClient{e: e, base: strings.TrimSuffix(*issuerURL, "/") + "/admin/" + k.path}
	cfg := client.Config{ClientID: *adminID, Scopes: []string{pgregistry.AdminScope}, BaseURL: *issuerURL,
		Resources: []string{strings.TrimSuffix(*issuerURL, "/") + "/admin"}, FetchTimeout: *timeout}
	if *keyFile != "" {
		cfg.Key, err = readKey(*keyFile)
	} else {
		env := *secretEnv
		if env == "" && *secretFile == "" && e.getenv(adminSecretEnv) != "" {
			env = adminSecretEnv
		}
		cfg.ClientSecret, err = clientSecret(e, *secretFile, env)
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	cfg.HTTPClient = &http.Client{Timeout: *timeout}
	if *caFile != "" {
		if cfg.HTTPClient.Transport, err = trusting(*caFile); err != nil {
			return err
		}
	}
	if cfg.TokenURL, err = discoverTokenURL(ctx, cfg.HTTPClient, strings.TrimSuffix(*issuerURL, "/"), false); err != nil {
		return err
	}
	c.hc = cfg.Client(ctx)
	c.ctx = ctx
	one := c.base + "/" + url.PathEscape(id)
	shown := printableID(id)
	switch verb {
	case "list":
		return c.list(k)
	case "show":
		return c.show(one)
	case "add":
		body, err := addBody(e, k, id, *jsonFile, *scopes, audience, *lifetime, *reference, hashes)
		if err != nil {
			return err
		}
		add := c.base
		if *generate {
			add += "?secret=generate"
		}
		return c.add(k, add, body)
	case "update":
		if *jsonFile == "" {
			return usagef("update: give the registration with -json FILE")
		}
		body, err := readJSONFile(e, *jsonFile)
		if err != nil {
			return err
		}
		_, err = c.call(http.MethodPut, one, body)
		if err == nil {
			fmt.Fprintf(e.stdout, "%s updated\n", shown)
		}
		return err
	case "disable", "enable":
		_, err := c.call(http.MethodPost, one+"/"+verb, nil)
		if err == nil {
			fmt.Fprintf(e.stdout, "%s %sd\n", shown, verb)
		}
		return err
	case "remove":
		// By the query, which carries any ID: a row stored before the
		// rule of IDs may hold one no path segment carries (".", "/").
		_, err := c.call(http.MethodDelete, c.base+"?id="+url.QueryEscape(id), nil)
		if err == nil {
			fmt.Fprintf(e.stdout, "%s removed\n", shown)
		}
		return err
	case "rotate-secret":
		var body []byte
		if *dropPrevious {
			body = []byte(`{"keepPrevious": false}`)
		}
		ans, err := c.call(http.MethodPost, one+"/rotate-secret", body)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "secret: %s\n", ans["secret"])
		fmt.Fprintf(e.stderr, "the new secret of %s is shown once: give it to the client; %v secret(s) now work\n", shown, ans["secrets"])
		return nil
	}
	return usagef("unknown verb %q: list, show, add, update, disable, enable, remove or rotate-secret", verb)
}

// parseWithID parses flags before and after the one argument, the ID.
func parseWithID(fs *flag.FlagSet, args []string) (string, error) {
	if err := parse(fs, args); err != nil {
		return "", err
	}
	if fs.NArg() == 0 {
		return "", nil
	}
	id, rest := fs.Arg(0), fs.Args()[1:]
	if err := parse(fs, rest); err != nil {
		return "", err
	}
	if fs.NArg() > 0 {
		return "", usagef("unexpected argument %q (the secret is never an argument: see -h)", fs.Arg(0))
	}
	return id, nil
}

// adminPaths is a kind of registration in the administration API.
type adminPaths struct{ path, list, idName string }

var (
	clientPaths = adminPaths{path: "clients", list: "clients", idName: "clientId"}
	apiPaths    = adminPaths{path: "apiresources", list: "apiResources", idName: "name"}
)

// addBody is the registration to create: the JSON file, or one built of
// the flags.
func addBody(e env, k adminPaths, id, file, scopes string, audience []string, lifetime int, reference bool, hashes []string) ([]byte, error) {
	if file != "" {
		if scopes != "" || len(audience) > 0 || lifetime != 0 || reference || len(hashes) > 0 {
			return nil, usagef("add: -json or the flags that describe the client, not both")
		}
		raw, err := readJSONFile(e, file)
		if err != nil {
			return nil, err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		m[k.idName], _ = json.Marshal(id)
		return json.Marshal(m)
	}
	m := map[string]any{k.idName: id, "scopes": strings.Fields(scopes)}
	if len(audience) > 0 {
		m["audience"] = audience
	}
	if lifetime != 0 {
		m["accessTokenLifetime"] = lifetime
	}
	if reference {
		m["accessTokenType"] = "reference"
	}
	if len(hashes) > 0 {
		m["secretHashes"] = hashes
	}
	return json.Marshal(m)
}

func readJSONFile(e env, file string) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(io.LimitReader(e.stdin, 64<<10))
	}
	return os.ReadFile(file)
}

// adminClient calls the administration API with the administrator's
// tokens.
type adminClient struct {
	e    env
	ctx  context.Context
	hc   *http.Client
	base string
}

// call sends body to u and returns the JSON answer; an answer other than
// 2xx is an error with the API's description.
func (c *adminClient) call(method, u string, body []byte) (map[string]any, error) {
	req, err := http.NewRequestWithContext(c.ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		var te *client.TokenError
		if errors.As(err, &te) && te.Code != "" {
			return nil, fmt.Errorf("the token endpoint refused the administrator: %s %s (HTTP %d)", te.Code, te.Description, te.StatusCode)
		}
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, err
	}
	var ans map[string]any
	_ = json.Unmarshal(raw, &ans)
	if resp.StatusCode/100 != 2 {
		desc, _ := ans["error_description"].(string)
		if desc == "" {
			desc = strings.TrimSpace(string(raw))
			if len(desc) > 300 {
				desc = desc[:300]
			}
		}
		if challenge := resp.Header.Get("WWW-Authenticate"); desc == "" && challenge != "" {
			desc = challenge
		}
		return nil, fmt.Errorf("%s %s: %s: %s", method, req.URL.EscapedPath(), resp.Status, desc)
	}
	return ans, nil
}

func (c *adminClient) list(k adminPaths) error {
	ans, err := c.call(http.MethodGet, c.base, nil)
	if err != nil {
		return err
	}
	items, _ := ans[k.list].([]any)
	tw := tabwriter.NewWriter(c.e.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tSECRETS\tSCOPES\tUPDATED")
	for _, it := range items {
		m, _ := it.(map[string]any)
		state := "enabled"
		if m["disabled"] == true {
			state = "disabled"
		}
		var cfg struct {
			Scopes []string `json:"scopes"`
		}
		raw, _ := json.Marshal(m["config"])
		_ = json.Unmarshal(raw, &cfg)
		id, _ := m[k.idName].(string)
		scopes := make([]string, len(cfg.Scopes))
		for i, sc := range cfg.Scopes {
			scopes[i] = printableID(sc)
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%v\n", printableID(id), state, m["secrets"], strings.Join(scopes, " "), m["updatedAt"])
	}
	return tw.Flush()
}

func (c *adminClient) show(u string) error {
	ans, err := c.call(http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	out, _ := json.MarshalIndent(ans, "", "  ")
	fmt.Fprintln(c.e.stdout, string(asciiJSON(out)))
	return nil
}

// asciiJSON returns the JSON text b with every character beyond ASCII
// written as a \u escape: the same JSON, which no terminal can take for
// a control (a bidirectional override in a stored configuration, say).
func asciiJSON(b []byte) []byte {
	var out []byte
	for _, r := range string(b) {
		switch {
		case r < utf8.RuneSelf:
			out = append(out, byte(r))
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
	}
	return out
}

func (c *adminClient) add(k adminPaths, u string, body []byte) error {
	ans, err := c.call(http.MethodPost, u, body)
	if err != nil {
		return err
	}
	id, _ := ans[k.idName].(string)
	fmt.Fprintf(c.e.stdout, "%s registered\n", printableID(id))
	if s, ok := ans["secret"].(string); ok {
		fmt.Fprintf(c.e.stdout, "secret: %s\n", s)
		fmt.Fprintln(c.e.stderr, "the secret is shown once: give it to the client; only its hash is stored")
	}
	return nil
}

// printableID returns id as it may be printed: as it is when it is
// printable ASCII (U+0021 to U+007E), the rule of registered IDs, else
// quoted with Go's escapes, so that a line end or a terminal escape of an
// ID stored before the rule cannot forge a row or drive the terminal.
func printableID(id string) string {
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return strconv.Quote(id)
		}
	}
	if id == "" {
		return `""`
	}
	return id
}
