import type { FastifyInstance, FastifyRequest } from "fastify";
import { DomainError } from "../errors/light.js";
import { findTokenByHash, type TokenRole, type Store } from "../store/index.js";
import { type Actor, redactStrings, type Audience } from "../catalog/index.js";
import { bearerToken, hashToken } from "../auth/index.js";
import {
  apiHeader,
  formatApiRange,
  negotiateApiVersion,
  parseApiRange,
  serverApiRange,
  softwareVersion,
  userHeader,
  versionHeader,
} from "../protocol/index.js";

/**
 * Who may call a route: `public` (health), `read` (any admin-API token),
 * `admin` (admin tokens only), `agent` (routes that check a node credential
 * themselves). Routes without it are admin-only, so a forgotten declaration
 * fails closed.
 */
export type Access = "public" | "read" | "admin" | "agent";

declare module "fastify" {
  interface FastifyContextConfig {
    access?: Access;
    /** For an admin route that is not a change: why a read-only token is refused, and what it can do instead. */
    readOnlyRefusal?: { readonly because: string; readonly hint: string };
  }
  interface FastifyRequest {
    actor: Actor | undefined;
    apiVersion: number;
    /** Who reads the answer, for masking: set from the token's role on read and admin routes. */
    audience: Audience;
  }
}

export function installAccessControl(app: FastifyInstance, store: Store, adminTokenHint: string): void {
  app.decorateRequest("actor", undefined);
  app.decorateRequest("apiVersion", serverApiRange.max);
  // Read until a token proves otherwise: a route that forgets to check still masks as for the least trusted caller.
  app.decorateRequest("audience", "read");

  app.addHook("onRequest", async (request, reply) => {
    void reply.header(versionHeader, softwareVersion);
    negotiate(request);
    void reply.header(apiHeader, String(request.apiVersion));
    const access = request.routeOptions.config.access ?? "admin";
    if (access === "public" || access === "agent") return;
    const token = bearerToken(request.headers.authorization);
    if (token === undefined) {
      throw new DomainError("unauthorized", "this API needs a bearer token, and none was sent", adminTokenHint);
    }
    const row = await findTokenByHash(store.db, hashToken(token));
    if (!row) {
      throw new DomainError("unauthorized", "the bearer token is not one this server issued (or it was revoked)", adminTokenHint);
    }
    if (access === "admin" && row.role !== "admin") {
      // "this change" told someone asking for a plan or a list that reading was a change.
      const refusal = request.routeOptions.config.readOnlyRefusal;
      const reading = request.method === "GET" || request.method === "HEAD";
      const because = refusal?.because ?? (reading ? `${request.method} ${request.routeOptions.url ?? request.url} needs an admin token` : "this change needs an admin token");
      throw new DomainError("forbidden", `token "${row.name}" is read-only; ${because}`, refusal?.hint ?? "Use an admin token (--token or LLMGW_TOKEN).");
    }
    const user = request.headers[userHeader];
    request.actor = { token: row.name, user: typeof user === "string" && user.length > 0 ? user.slice(0, 128) : null };
    request.audience = row.role === "admin" ? "admin" : "read";
  });

  // Every answer of a token-checked route goes through the masking net (URL passwords always, env values
  // for read tokens), so an events list or a view field added later cannot show a secret the views missed.
  // Agent routes are left alone: what the server sends an agent is what the agent must run.
  app.addHook("preSerialization", async (request, _reply, payload) => {
    const access = request.routeOptions.config.access ?? "admin";
    return access === "read" || access === "admin" ? redactStrings(payload, request.audience) : payload;
  });
}

function negotiate(request: FastifyRequest): void {
  const header = request.headers[apiHeader];
  if (header === undefined) return; // curl and friends: the newest API
  const clientRange = parseApiRange(Array.isArray(header) ? header[0] : header);
  if (!clientRange) {
    throw new DomainError("version_unsupported", `header ${apiHeader}: "${String(header)}" is not a version or a range like 1-2`, "Send a version such as 1, or leave the header out.");
  }
  const result = negotiateApiVersion(clientRange, serverApiRange);
  if ("version" in result) {
    request.apiVersion = result.version;
    return;
  }
  const client = request.headers[versionHeader];
  const clientName = typeof client === "string" ? `llmgw ${client}` : "the client";
  throw new DomainError(
    "version_unsupported",
    `this server (llmgw ${softwareVersion}) speaks admin API ${formatApiRange(serverApiRange)}; ${clientName} speaks ${formatApiRange(clientRange)}`,
    result.upgrade === "server" ? `Upgrade the server to llmgw ${typeof client === "string" ? client : "the client's version"} or newer.` : `Upgrade the CLI to llmgw ${softwareVersion} or newer.`,
  );
}

export function requireActor(request: FastifyRequest): Actor {
  if (!request.actor) throw new DomainError("unauthorized", "this change needs a bearer token", "Send an admin token.");
  return request.actor;
}

export type { TokenRole };
