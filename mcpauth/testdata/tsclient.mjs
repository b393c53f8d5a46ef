// The TypeScript SDK's client (@modelcontextprotocol/sdk) against an MCP
// server: mcpauth's TestTypeScriptSDKClient runs it with node, from the
// folder the SDK is installed in, and reads the one JSON line it prints.
//
//   node tsclient.mjs token URL TOKEN        connect with the token, call list_users
//   node tsclient.mjs none URL               no token: the 401 as the SDK reads it
//   node tsclient.mjs provider URL ID SECRET ISSUER SCOPE
//                                          the SDK's ClientCredentialsProvider discovers the issuer
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';

const [mode, url, a, b, c, d] = process.argv.slice(2);

async function callTools(transport) {
  const client = new Client({ name: 'idsauth-ts-client', version: '1.0.0' });
  await client.connect(transport);
  const tools = (await client.listTools()).tools.map((t) => t.name);
  const res = await client.callTool({ name: 'list_users', arguments: {} });
  await client.close();
  return { tools, text: res.content[0].text };
}

let out;
try {
  if (mode === 'token') {
    out = await callTools(new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${a}` } },
    }));
  } else if (mode === 'none') {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'idsauth-ts-client', version: '1.0.0' } } }),
    });
    const p = extractWWWAuthenticateParams(res);
    let sdkError = '';
    try {
      await callTools(new StreamableHTTPClientTransport(new URL(url)));
    } catch (e) {
      sdkError = `${e.constructor.name} ${e.code ?? ''}`.trim();
    }
    out = { status: res.status, resourceMetadataUrl: p.resourceMetadataUrl?.href ?? '', scope: p.scope ?? '', error: p.error ?? '', sdkError };
  } else if (mode === 'provider') {
    out = await callTools(new StreamableHTTPClientTransport(new URL(url), {
      authProvider: new ClientCredentialsProvider({ clientId: a, clientSecret: b, expectedIssuer: c, scope: d }),
    }));
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
} catch (e) {
  out = { failed: `${e.constructor.name}: ${e.message}` };
}
console.log(JSON.stringify(out));
