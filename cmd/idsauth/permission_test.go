package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/idsauth/idsauth/secret"
)

// TestUnreadableKeyNamesTheUser: a signing key file that the process may
// not read (mode 000) makes check-config and serve fail naming the field,
// the file, and the uid the process runs as, with what to do. The error
// is a real permission error either way: as root (who reads any file)
// the commands run as uid 65532, the container image's user; otherwise
// as the test's own user.
func TestUnreadableKeyNamesTheUser(t *testing.T) {
	dir, err := os.MkdirTemp("", "idsauth-perm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // others may enter: uid 65532 runs the binary from here
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "idsauth")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	if r := idsauth(t, bin, "", nil, "gen-key", "-alg", "ES256", "-out", filepath.Join(dir, "signing.pem")); r.code != 0 {
		t.Fatalf("gen-key: %+v", r)
	}
	if err := os.Chmod(filepath.Join(dir, "signing.pem"), 0); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "idsauth.json")
	content := `{"issuer":"http://127.0.0.1/ids","keys":[{"file":"signing.pem"}],"clients":[{"clientId":"a","secretHashes":["` + secret.HashSHA256("s").String() + `"],"scopes":["pd_AdminWebApi"]}]}`
	if err := os.WriteFile(cfg, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	uid := os.Getuid()
	var cred *syscall.Credential
	if uid == 0 {
		uid = 65532
		cred = &syscall.Credential{Uid: 65532, Gid: 65532}
	}
	for _, args := range [][]string{
		{"check-config", cfg},
		{"serve", "-addr", "127.0.0.1:0", "-ops-addr", "off", "-config", cfg},
	} {
		cmd := exec.Command(bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		ee, ok := err.(*exec.ExitError)
		want := []string{
			cfg + ": keys[0].file: open " + filepath.Join(dir, "signing.pem") + ": permission denied",
			fmt.Sprintf("idsauth runs as uid %d", uid), fmt.Sprintf("chown %d FILE", uid), "the container image runs as uid 65532",
		}
		for _, w := range want {
			if !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), w) {
				t.Errorf("%s: %v\n%s\nwant exit 1 and %q", args[0], err, stderr.String(), w)
				break
			}
		}
	}
}
