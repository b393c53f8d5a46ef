package conformance

import (
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/pgtest"
)

// TestRedTeamRemoveAnyStoredID: "idsauth clients remove" removes a
// registration whatever its ID, those stored by SQL before the rule of
// IDs among them: "/" too, which no path of the administration API
// reaches (the router takes it for a trailing slash), as "." and "..".
// It sent "/" by its path and failed with 404.
func TestRedTeamRemoveAnyStoredID(t *testing.T) {
	pg := pgtest.Start(t)
	env := []string{"IDSAUTH_PG_URL=" + pg.NewDatabase(t)}
	addr := freeAddr(t)
	_, path := registryDeployment(t, addr)
	if code, out, errOut := command(t, env, "", "migrate", "-config", path); code != 0 {
		t.Fatalf("migrate: %d %q %s", code, out, errOut)
	}
	start(t, env, "-addr", addr, "-ops-addr", "127.0.0.1:0", "-config", path)
	admin := []string{"-issuer", "http://" + addr + "/ids", "-admin-id", "operator"}
	adminEnv := append(env, "IDSAUTH_ADMIN_SECRET="+operatorSecret)
	ids := []string{"/", ".", "..", "a/b", "plain"}
	for _, id := range ids {
		sqlExec(t, env[0][len("IDSAUTH_PG_URL="):], `INSERT INTO idsauth_registrations (kind, id, config, secret_hashes) VALUES ('client', '`+id+`', '{"scopes": ["pd_AdminWebApi"]}', '{}')`)
	}
	for _, id := range ids {
		if code, out, errOut := command(t, adminEnv, "", append(append([]string{"clients", "remove"}, admin...), id)...); code != 0 || !strings.Contains(out, " removed") {
			t.Errorf("clients remove %q: %d %q %s", id, code, out, errOut)
		}
	}
	if code, out, _ := command(t, adminEnv, "", append([]string{"clients", "list"}, admin...)...); code != 0 || strings.Count(out, "\n") != 1 {
		t.Errorf("clients list after every remove: %d %q, want the header alone", code, out)
	}
}
