-- idsauth-gate.lua: HAProxy (2.5 and later) asks idsauth gate whether a
-- request may pass, with core.httpclient, and sends the gate's refusal to
-- the client whole: its status, WWW-Authenticate, DPoP-Nonce, body. On a
-- yes, the upstream headers the gate names (the claims, the assertion)
-- replace the client's of those names. docs/GATEWAY.md has the recipe:
--
--   global
--       lua-load /etc/haproxy/idsauth-gate.lua
--   frontend api
--       http-request lua.idsauth-gate http://10.0.0.9:8181/auth X-Client-Id,X-Scope,X-Idsauth-Assertion
--
-- The gate must trust HAProxy's address (trustedProxies): the original
-- request goes in X-Forwarded-Method, -Host and -Uri, the client's
-- Authorization and DPoP headers as they came, and Client-Cert (RFC 9440)
-- when the frontend set it from the client's TLS certificate. A gate that
-- does not answer (or answers nothing HTTP) refuses the request: 503.

local forwarded = { "authorization", "dpop", "client-cert" }
local hop = { ["connection"] = true, ["content-length"] = true, ["transfer-encoding"] = true, ["keep-alive"] = true }

-- values are a header's values, as HAProxy gives them (a table from 0).
local function values(t)
    local out = {}
    if t == nil then
        return out
    end
    local i = 0
    while t[i] ~= nil do
        out[#out + 1] = t[i]
        i = i + 1
    end
    return out
end

core.register_action("idsauth-gate", { "http-req" }, function(txn, url, copy)
    local req = txn.http:req_get_headers()
    local headers = {
        ["x-forwarded-method"] = { txn.f:method() },
        ["x-forwarded-uri"] = { txn.f:url() },
        ["x-forwarded-host"] = values(req["host"]),
        ["x-forwarded-proto"] = { txn.f:ssl_fc() and "https" or "http" },
        ["x-request-id"] = { txn.f:uuid() },
    }
    for _, name in ipairs(forwarded) do
        local v = values(req[name])
        if #v > 0 then
            headers[name] = v
        end
    end
    local res = core.httpclient():get({ url = url, headers = headers, timeout = 5000 })
    if res == nil or res.status == nil or res.status == 0 then
        local reply = txn:reply()
        reply:set_status(503)
        reply:add_header("content-type", "text/plain; charset=utf-8")
        reply:add_header("cache-control", "no-store")
        reply:set_body("Service Unavailable: the gate did not answer\n")
        txn:done(reply)
        return
    end
    if res.status == 200 then
        for name in string.gmatch(copy or "", "[^,]+") do
            txn.http:req_del_header(name)
            local v = values(res.headers[string.lower(name)])
            if #v == 1 and v[1] ~= "" then
                txn.http:req_set_header(name, v[1])
            end
        end
        return
    end
    local reply = txn:reply()
    reply:set_status(res.status)
    for name, v in pairs(res.headers) do
        if not hop[name] then
            for _, value in ipairs(values(v)) do
                reply:add_header(name, value)
            end
        end
    end
    reply:set_body(res.body or "")
    txn:done(reply)
end, 2)
