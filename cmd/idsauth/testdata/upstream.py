# An upstream that is not Go, for the gate's tests behind real proxies:
# Python's http.server, answering every request with what reached it as
# JSON (the method, the path as the request line has it, the path as
# http.server's file serving reads it, and the gate's headers), so that a
# test sees what the proxy passed upstream after the gate said yes.
import http.server
import json
import os
import posixpath
import sys
import urllib.parse

GATE_HEADERS = ("X-Client-Id", "X-Scope", "X-Idsauth-Assertion", "Authorization", "DPoP")


class Echo(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self):
        raw = self.path.split("?", 1)[0]
        # The file SimpleHTTPRequestHandler.translate_path serves: every
        # escape decoded, dot segments resolved, empty words and words
        # that are dot segments or hold a separator dropped.
        path = posixpath.normpath(urllib.parse.unquote(raw))
        words = [w for w in path.split("/") if w and not os.path.dirname(w) and w not in (os.curdir, os.pardir)]
        read = "/" + "/".join(words)
        body = json.dumps({
            "method": self.command,
            "path": raw,
            "read": read,
            "headers": {h: self.headers.get_all(h) for h in GATE_HEADERS if self.headers.get_all(h)},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = answer

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Echo).serve_forever()
