// oauthserver.mjs is a remote MCP server behind OAuth, for the tests of
// `auth = "oauth"` upstreams (docs/design/mcp.md). It is the TypeScript SDK's own
// server-side authorization support doing the protocol work: mcpAuthRouter
// serves RFC 8414 authorization-server metadata, dynamic client
// registration (RFC 7591), /authorize (PKCE S256 required), /token (the
// code_verifier checked against the challenge; refresh_token grants) and
// /revoke, and the RFC 9728 protected-resource
// metadata (the same router); requireBearerAuth answers a request without a valid token
// 401 with WWW-Authenticate naming that metadata. What this file adds is
// the provider the SDK leaves to its user: an in-memory store of clients,
// codes and tokens with short-lived access tokens and rotated refresh
// tokens, and a user who is already signed in (authorize redirects at once
// with a code, as a browser with a session would see it).
//
// Test controls (not OAuth): POST /admin/revoke drops every refresh and
// access token (a revocation by the operator of the server), with
// ?only=access the access tokens only (as a server restart would); GET
// /admin/stats counts what happened; GET /admin/issued lists every token
// handed out. Environment: ACCESS_TTL (seconds,
// default 3600), PRECLIENT (a client id registered beforehand). It prints one JSON line {"url": MCP endpoint} once it
// listens on a loopback port of its own.
import { randomUUID } from "node:crypto";
import express from "express";
import { mcpAuthRouter, getOAuthProtectedResourceMetadataUrl } from "@modelcontextprotocol/sdk/server/auth/router.js";
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js";
import { InvalidGrantError, InvalidTokenError } from "@modelcontextprotocol/sdk/server/auth/errors.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const ttl = Number(process.env.ACCESS_TTL || 3600);
const issued = []; // every token handed out, for the tests' grep
const stats = { registrations: 0, authorizations: 0, codeExchanges: 0, refreshes: 0, refusedRefreshes: 0, mcpRequests: 0, mcpRefused: 0, mcpRefusedWithToken: 0, toolCalls: 0 };

class Clients {
  constructor() { this.clients = new Map(); }
  async getClient(id) { return this.clients.get(id); }
  async registerClient(c) { stats.registrations++; this.clients.set(c.client_id, c); return c; }
}

class Provider {
  constructor() {
    this.clientsStore = new Clients();
    this.codes = new Map();   // code -> {client, params}
    this.access = new Map();  // token -> {clientId, scopes, expiresAt, resource}
    this.refresh = new Map(); // token -> {clientId, scopes, resource}
  }
  async authorize(client, params, res) {
    // The SDK's authorize handler has checked redirect_uri against the
    // client's (any port on loopback, RFC 8252 7.3).
    stats.authorizations++;
    const code = randomUUID();
    this.codes.set(code, { client, params });
    const target = new URL(params.redirectUri);
    target.searchParams.set("code", code);
    if (params.state !== undefined) target.searchParams.set("state", params.state);
    res.redirect(target.toString());
  }
  async challengeForAuthorizationCode(client, code) {
    const c = this.codes.get(code);
    if (!c) throw new InvalidGrantError("unknown authorization code");
    return c.params.codeChallenge;
  }
  issue(clientId, scopes, resource) {
    const access = randomUUID(), refresh = randomUUID();
    issued.push(access, refresh);
    this.access.set(access, { clientId, scopes, resource, expiresAt: Date.now() + ttl * 1000 });
    this.refresh.set(refresh, { clientId, scopes, resource });
    return { access_token: access, token_type: "bearer", expires_in: ttl, refresh_token: refresh, scope: scopes.join(" ") };
  }
  async exchangeAuthorizationCode(client, code, _verifier, redirectUri, resource) {
    const c = this.codes.get(code);
    if (!c) throw new InvalidGrantError("unknown authorization code");
    if (c.client.client_id !== client.client_id) throw new InvalidGrantError("code issued to another client");
    if (redirectUri !== undefined && redirectUri !== c.params.redirectUri) throw new InvalidGrantError("redirect_uri differs");
    if (!c.params.resource || !resource || c.params.resource.href !== resource.href) throw new InvalidGrantError("resource missing or differs");
    this.codes.delete(code);
    stats.codeExchanges++;
    return this.issue(client.client_id, c.params.scopes || [], c.params.resource.href);
  }
  async exchangeRefreshToken(client, token, scopes, resource) {
    const r = this.refresh.get(token);
    if (!r || r.clientId !== client.client_id) {
      stats.refusedRefreshes++;
      throw new InvalidGrantError("refresh token unknown or revoked");
    }
    this.refresh.delete(token); // rotated: each refresh token works once
    stats.refreshes++;
    return this.issue(client.client_id, scopes && scopes.length ? scopes : r.scopes, r.resource);
  }
  async verifyAccessToken(token) {
    const a = this.access.get(token);
    if (!a || a.expiresAt < Date.now()) throw new InvalidTokenError("invalid or expired token");
    return { token, clientId: a.clientId, scopes: a.scopes, expiresAt: Math.floor(a.expiresAt / 1000), resource: new URL(a.resource) };
  }
  async revokeToken(client, { token }) {
    this.refresh.delete(token);
    this.access.delete(token);
  }
}

const provider = new Provider();
// PRECLIENT registers a public client beforehand (a configured client_id),
// with a loopback redirect on any port.
if (process.env.PRECLIENT) {
  provider.clientsStore.clients.set(process.env.PRECLIENT, {
    client_id: process.env.PRECLIENT, redirect_uris: ["http://127.0.0.1/callback"], token_endpoint_auth_method: "none",
    grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], client_name: "preregistered",
  });
}
const app = express();
const server = app.listen(0, "127.0.0.1", () => {
  const base = new URL(`http://127.0.0.1:${server.address().port}`);
  const mcpURL = new URL("/mcp", base);
  const off = { rateLimit: false };
  app.use(mcpAuthRouter({ provider, issuerUrl: base, scopesSupported: ["mcp:tools"], resourceServerUrl: mcpURL,
    authorizationOptions: off, clientRegistrationOptions: off, revocationOptions: off, tokenOptions: off }));
  const bearer = requireBearerAuth({ verifier: provider, requiredScopes: [], resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpURL), expectedResource: mcpURL });
  app.all("/mcp", express.json(), (req, res, next) => {
    stats.mcpRequests++;
    res.on("finish", () => {
      if (res.statusCode === 401) {
        stats.mcpRefused++;
        if (req.headers.authorization) stats.mcpRefusedWithToken++;
      }
    });
    next();
  }, bearer, async (req, res) => {
    // Stateless: a server and transport per request.
    const mcp = new McpServer({ name: "oauth-upstream", version: "1.0.0" });
    mcp.registerTool("whoami", { description: "Say which OAuth client the request was authorized for.", inputSchema: {}, annotations: { readOnlyHint: true } },
      async (_args, extra) => { stats.toolCalls++; return { content: [{ type: "text", text: `client ${extra.authInfo.clientId} scopes ${extra.authInfo.scopes.join(" ")}` }] }; });
    // A careless server: it answers with the token it was sent.
    mcp.registerTool("echo_auth", { description: "Echo the bearer token of the request.", inputSchema: {}, annotations: { readOnlyHint: true } },
      async (_args, extra) => { stats.toolCalls++; return { content: [{ type: "text", text: `token ${extra.authInfo.token}` }], structuredContent: { token: extra.authInfo.token } }; });
    mcp.registerTool("echo", { description: "Echo a message.", inputSchema: { message: z.string() }, annotations: { readOnlyHint: true } },
      async ({ message }) => { stats.toolCalls++; return { content: [{ type: "text", text: message }] }; });
    const t = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => { t.close(); mcp.close(); });
    await mcp.connect(t);
    await t.handleRequest(req, res, req.body);
  });
  app.post("/admin/revoke", (req, res) => {
    if (req.query.only !== "access") provider.refresh.clear();
    provider.access.clear();
    res.json({ ok: true });
  });
  app.get("/admin/stats", (_req, res) => res.json(stats));
  app.get("/admin/issued", (_req, res) => res.json(issued));
  console.log(JSON.stringify({ url: mcpURL.href }));
});
