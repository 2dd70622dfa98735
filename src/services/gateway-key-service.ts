import { randomUUID } from "node:crypto";
import { type Actor, parseMoment } from "../catalog/index.js";
import { hashToken, newToken } from "../auth/index.js";
import { DomainError, didYouMean } from "../errors/index.js";
import { type GatewayKeyCreated, type GatewayKeyView, dryRunAnswer, type DryRunAnswer } from "../protocol/index.js";
import { insertAuditEvent, insertGatewayKey, listGatewayKeys, revokeGatewayKey, type GatewayKeyRow, type Store, type Database } from "../store/index.js";
import type { Kysely } from "kysely";
import type { CatalogService } from "./catalog-service.js";

export interface NewGatewayKey {
  readonly name: string;
  readonly models?: readonly string[] | undefined;
  readonly rpm?: number | undefined;
  readonly tpm?: number | undefined;
  /** Requests the key may have in flight at once; left out, the gateway's limits.requests_per_key. */
  readonly max_in_flight?: number | undefined;
  /** A duration from now (30d) or a date; see parseMoment. */
  readonly expires?: string | undefined;
}

/**
 * Gateway API keys for clients of /v1. A key is shown once, when made; only
 * its hash is kept. Revoking keeps the row (its name and usage stay). Every
 * change is audited by key name and tells the gateway at once (`onChange`),
 * so the API's answer means the change is in force on this server.
 */
export class GatewayKeyService {
  constructor(
    private readonly store: Store,
    private readonly catalog: CatalogService,
    private readonly onChange: () => Promise<void> = async () => undefined,
    private readonly now: () => number = Date.now,
    /** Told with every key made while this server's gateway is open (see GatewayKeyCreated.notice). */
    private readonly openGatewayNotice: string | null = null,
  ) {}

  async list(): Promise<GatewayKeyView[]> {
    const at = this.now();
    return (await listGatewayKeys(this.store.db)).map((row) => gatewayKeyView(row, at));
  }

  async create(input: NewGatewayKey, actor: Actor): Promise<GatewayKeyCreated> {
    const nowMs = this.now();
    const expiresAt = input.expires === undefined ? null : expiryFrom(input.expires, nowMs);
    const models = input.models === undefined ? null : [...new Set(input.models)];
    if (models !== null) await this.checkNames(models);
    const created = await this.store.withCatalogLock(async (transaction) => {
      await checkNameFree(transaction, input.name);
      const key = newToken("key");
      const row: GatewayKeyRow = {
        id: randomUUID(),
        name: input.name,
        hash: hashToken(key),
        models,
        rpm: input.rpm ?? null,
        tpm: input.tpm ?? null,
        maxInFlight: input.max_in_flight ?? null,
        expiresAt,
        createdAt: new Date(nowMs).toISOString(),
        revokedAt: null,
      };
      await insertGatewayKey(transaction, row);
      const view = gatewayKeyView(row, nowMs);
      await insertAuditEvent(transaction, { at: row.createdAt, actor: actor.token, actor_user: actor.user, action: "gateway-key-created", model: null, before: null, after: view });
      return { ...view, key, notice: this.openGatewayNotice };
    });
    await this.onChange();
    return created;
  }

  /** What `create` would answer, refused as it would be, writing nothing: no key is made, so none is shown. */
  async previewCreate(input: NewGatewayKey): Promise<DryRunAnswer<GatewayKeyView>> {
    const nowMs = this.now();
    const expiresAt = input.expires === undefined ? null : expiryFrom(input.expires, nowMs);
    const models = input.models === undefined ? null : [...new Set(input.models)];
    if (models !== null) await this.checkNames(models);
    await checkNameFree(this.store.db, input.name);
    const view = gatewayKeyView({ id: "", name: input.name, hash: "", models, rpm: input.rpm ?? null, tpm: input.tpm ?? null, maxInFlight: input.max_in_flight ?? null, expiresAt, createdAt: new Date(nowMs).toISOString(), revokedAt: null }, nowMs);
    const scope = models === null ? "every model" : models.join(", ");
    return dryRunAnswer(view, [{ kind: "key-create", summary: `create the gateway key ${input.name} for ${scope} (its value is shown once, by the real call)` }]);
  }

  /** What `revoke` would answer, refused as it would be, writing nothing. */
  async previewRevoke(name: string): Promise<DryRunAnswer<GatewayKeyView>> {
    const target = (await listGatewayKeys(this.store.db)).find((key) => key.name === name);
    if (!target) throw new DomainError("gateway_key_not_found", `no gateway key named "${name}"`, "List the gateway keys with `llmgw ctl keys`.");
    if (target.revokedAt !== null) return dryRunAnswer(gatewayKeyView(target, this.now()), []);
    const after = gatewayKeyView({ ...target, revokedAt: new Date(this.now()).toISOString() }, this.now());
    return dryRunAnswer(after, [{ kind: "key-revoke", summary: `revoke the gateway key ${name}: requests carrying it are refused from then on` }]);
  }

  async revoke(name: string, actor: Actor): Promise<GatewayKeyView> {
    const revoked = await this.store.withCatalogLock(async (transaction) => {
      const target = (await listGatewayKeys(transaction)).find((key) => key.name === name);
      if (!target) {
        throw new DomainError("gateway_key_not_found", `no gateway key named "${name}"`, "List the gateway keys with `llmgw ctl keys`.");
      }
      if (target.revokedAt !== null) return gatewayKeyView(target, this.now());
      const at = new Date(this.now()).toISOString();
      await revokeGatewayKey(transaction, name, at);
      const before = gatewayKeyView(target, this.now());
      const after = gatewayKeyView({ ...target, revokedAt: at }, this.now());
      await insertAuditEvent(transaction, { at, actor: actor.token, actor_user: actor.user, action: "gateway-key-revoked", model: null, before, after });
      return after;
    });
    await this.onChange();
    return revoked;
  }

  /** A typo in --models would make a key that can call nothing; names are checked against the catalog as it is now. */
  private async checkNames(models: readonly string[]): Promise<void> {
    const known = new Set<string>();
    for (const model of await this.catalog.list()) {
      known.add(model.name);
      for (const alias of model.aliases) known.add(alias);
      for (const adapter of model.entry.adapters ?? []) known.add(adapter.name);
    }
    const unknown = models.filter((name) => !known.has(name));
    if (unknown.length > 0) {
      throw new DomainError(
        "model_not_found",
        `models: ${unknown.map((name) => `"${name}"${didYouMean(name, known)}`).join(", ")} ${unknown.length === 1 ? "is not a model, alias or adapter" : "are not models, aliases or adapters"} in the catalog`,
        known.size > 0 ? `Names a key may be limited to: ${[...known].sort().join(", ")}.` : "The catalog is empty; add the model first (`llmgw ctl model add`).",
      );
    }
  }
}

async function checkNameFree(db: Kysely<Database>, name: string): Promise<void> {
  if ((await listGatewayKeys(db)).some((key) => key.name === name)) {
    throw new DomainError(
      "name_taken",
      `a gateway key named "${name}" exists already (revoked keys keep their names, so their usage stays theirs)`,
      "Choose another name; `llmgw ctl keys` lists the names in use.",
    );
  }
}

/** A key born expired is always a typo, so a past expiry is refused. */
function expiryFrom(text: string, nowMs: number): string {
  const atMs = parseMoment(text, nowMs, "ahead", "expires");
  if (atMs <= nowMs) {
    throw new DomainError("invalid_input", `expires: ${new Date(atMs).toISOString()} is already past`, "Give a time in the future, or a duration from now such as 30d.");
  }
  return new Date(atMs).toISOString();
}

export function gatewayKeyView(row: GatewayKeyRow, nowMs: number): GatewayKeyView {
  const expiresAtMs = row.expiresAt === null ? null : Date.parse(row.expiresAt);
  const expired = expiresAtMs !== null && (Number.isNaN(expiresAtMs) || nowMs >= expiresAtMs);
  return {
    name: row.name,
    state: row.revokedAt !== null ? "revoked" : expired ? "expired" : "active",
    models: row.models === null ? null : [...row.models],
    rpm: row.rpm,
    tpm: row.tpm,
    max_in_flight: row.maxInFlight,
    expires_at: row.expiresAt,
    created_at: row.createdAt,
    revoked_at: row.revokedAt,
  };
}
