package main

import (
	"net/http"
	"strings"
	"testing"
)

// pathRows is the table of paths a client may write for one route, and
// what each proxy, with the gate behind it, answers with a token of the
// Connect route's scope alone (pd_ConnectWebApi; the Admin route needs
// pd_AdminWebApi): 200 where the upstream is reached, a refusal
// otherwise. Whatever a row's answer, a request that reaches the upstream
// reaches it under the route the gate decided for: Python's http.server
// reads the path under /webapi/api/v3/demo/Connect (checked on every 200).
// "gate" is the gate's answer to the path as a proxy forwards it written
// as the client did (X-Forwarded-Uri), and as Envoy's HTTP ext_authz
// (/envoy and the path) gives it: what Envoy does before it asks the
// gate is in docs/GATEWAY.md, untested.
var pathRows = []struct {
	name, raw string
	want      map[string]int // by proxy: "nginx", "haproxy", "gate"
}{
	{"the route's path", "/webapi/api/v3/demo/Connect/Session", all(200)},
	{"a detour through ..", "/webapi/api/v3/demo/Connect/../Admin/Users", all(403)},
	{"a detour through escaped dots", "/webapi/api/v3/demo/Connect/%2e%2e/Admin/Users", all(403)},
	{"a detour from the other route", "/webapi/api/v3/demo/Admin/../Connect/Session", all(200)},
	{"an escaped slash in the detour", "/webapi/api/v3/demo/Connect%2F..%2FAdmin/Users", all(400)},
	{"dots and an escaped slash", "/webapi/api/v3/demo/Connect/..%2FAdmin/Users", all(400)},
	{"escaped backslashes", "/webapi/api/v3/demo/Connect%5C..%5CAdmin/Users", all(400)},
	{"a path parameter on the dots (Tomcat's ..;)", "/webapi/api/v3/demo/Connect/..;/Admin/Users", all(400)},
	{"an empty segment", "//webapi/api/v3/demo/Connect/Session", all(200)},
	{"a dot segment", "/webapi/api/v3/demo/./Connect/Session", all(200)},
	{"a trailing dot segment", "/webapi/api/v3/demo/Connect/Session/.", all(200)},
	{"another case", "/webapi/api/v3/demo/CONNECT/Session", all(403)},
	{"an escaped NUL", "/webapi/api/v3/demo/Connect/Session%00", all(400)},
	// Traefik cleans the path itself (its sanitizePath): no route.
	{"above the root", "/webapi/../../etc/passwd", with(all(400), "traefik", 403)},
	{"a bad escape", "/webapi/api/v3/demo/Connect/Session%zz", all(400)},
}

func all(status int) map[string]int {
	return map[string]int{"nginx": status, "haproxy": status, "caddy": status, "traefik": status, "gate": status}
}

// with is want with proxy's status changed.
func with(want map[string]int, proxy string, status int) map[string]int {
	want[proxy] = status
	return want
}

// checkPathRow checks an answer of the table's: its status, and, on 200,
// where the upstream read the path.
func checkPathRow(t *testing.T, proxy, name, raw string, want int, status int, body string) {
	t.Helper()
	if status != want {
		t.Errorf("%s: %s %q: status %d, want %d (%.200s)", proxy, name, raw, status, want, body)
		return
	}
	if status == http.StatusOK && body != "" {
		if read := sawOf(t, body).Read; !under(read, "/webapi/api/v3/demo/Connect", false) {
			t.Errorf("%s: %s %q: the upstream read %q, outside the route the gate decided for", proxy, name, raw, read)
		}
	}
}

// TestGatePaths: the table against the gate as the proxies that are not
// run here ask it (X-Forwarded-Uri, Envoy's path), in process.
func TestGatePaths(t *testing.T) {
	iss := testIssuer(t)
	_, gsrv := startGate(t, issuerGate(t, iss.URL(), testAPIHost, nil))
	tok := runnerToken(t, iss, "runner", "pd_ConnectWebApi")
	for _, row := range pathRows {
		for _, envoy := range []bool{false, true} {
			req, _ := http.NewRequest(http.MethodGet, gsrv.URL+"/auth", nil)
			if envoy {
				req, _ = http.NewRequest(http.MethodGet, gsrv.URL+"/envoy", nil)
				req.URL.Opaque = "/envoy" + row.raw
				req.Host = testAPIHost
			} else {
				req.Header.Set("X-Forwarded-Method", "GET")
				req.Header.Set("X-Forwarded-Host", testAPIHost)
				req.Header.Set("X-Forwarded-Uri", row.raw)
			}
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			how := map[bool]string{false: "X-Forwarded-Uri", true: "Envoy"}[envoy]
			if resp.StatusCode != row.want["gate"] {
				t.Errorf("%s: %s %q: %d, want %d", how, row.name, row.raw, resp.StatusCode, row.want["gate"])
			}
		}
	}
}

// TestGatePathsBehindNginx: the table through a real nginx.
func TestGatePathsBehindNginx(t *testing.T) {
	iss := testIssuer(t)
	b := startBehindNginx(t, func(host string) string { return issuerGate(t, iss.URL(), host, nil) })
	tok := runnerToken(t, iss, "runner", "pd_ConnectWebApi")
	for _, row := range pathRows {
		resp, body := b.raw(t, "GET", row.raw, "Authorization: Bearer "+tok)
		checkPathRow(t, "nginx", row.name, row.raw, row.want["nginx"], resp.StatusCode, strings.TrimSpace(body))
	}
}

// TestPlainPathsReadAsThemselves: every path plain calls plain (whose
// readings cost nothing) is read as itself by the full reading, over
// every path of up to seven characters of an alphabet of the characters
// that matter.
func TestPlainPathsReadAsThemselves(t *testing.T) {
	const alphabet = "/a.;%\\2F"
	var walk func(p string, n int)
	checked := 0
	walk = func(p string, n int) {
		if plain(p) {
			checked++
			r, err := readEscaped(p)
			if err != nil || r != [3]string{p, p, p} {
				t.Fatalf("%q is plain, and its readings are %q (%v)", p, r, err)
			}
		}
		if n == 0 {
			return
		}
		for i := 0; i < len(alphabet); i++ {
			walk(p+alphabet[i:i+1], n-1)
		}
	}
	walk("/", 7)
	if checked < 1000 {
		t.Fatalf("%d plain paths checked", checked)
	}
}
