import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import { isDeepStrictEqual } from "node:util";
import type { Actor, ModelEntry } from "../catalog/index.js";
import { hashToken, newToken } from "../auth/index.js";
import { DomainError, type ErrorDetail } from "../errors/light.js";
import {
  catalogExportVersion,
  type CatalogExport,
  type CatalogImportResult,
  type ExportedKey,
  type ExportedToken,
  dryRunAnswer,
  type Change,
  type DryRunAnswer,
} from "../protocol/index.js";
import {
  insertAuditEvent,
  insertGatewayKey,
  listGatewayKeys,
  type GatewayKeyRow,
  insertModelEntry,
  listModelEntries,
  type Store,
  type Database,
  insertToken,
  listTokens,
  insertVersionChange,
  listVersionChanges,
} from "../store/index.js";
import type { CatalogService } from "./catalog-service.js";

const keyMetadata = (row: GatewayKeyRow): ExportedKey => ({
  name: row.name,
  models: row.models === null ? null : [...row.models],
  rpm: row.rpm,
  tpm: row.tpm,
  ...(row.maxInFlight !== null ? { max_in_flight: row.maxInFlight } : {}),
  expires_at: row.expiresAt,
  revoked_at: row.revokedAt,
});

/** A key of the file as keyMetadata writes it: a null or absent max_in_flight alike mean the server's cap, so neither is a conflict. */
function asExported(key: ExportedKey): ExportedKey {
  const { max_in_flight: maxInFlight, ...rest } = key;
  return maxInFlight === null || maxInFlight === undefined ? rest : { ...rest, max_in_flight: maxInFlight };
}

/** What an import would do, decided on the target's state as read: pure, so the dry run and the import agree. */
interface ImportPlan {
  readonly models: readonly ModelEntry[];
  readonly unchangedModels: readonly string[];
  readonly keys: readonly ExportedKey[];
  readonly unchangedKeys: readonly string[];
  readonly tokens: readonly ExportedToken[];
  readonly unchangedTokens: readonly string[];
  readonly conflicts: readonly ErrorDetail[];
}

function planImport(
  document: CatalogExport,
  target: { runtime: readonly ModelEntry[]; keys: readonly ExportedKey[]; tokens: readonly ExportedToken[]; isDeclared: (name: string) => boolean; declaredIn: string },
): ImportPlan {
  const conflicts: ErrorDetail[] = [];
  const duplicates = (kind: string, names: readonly string[]) => {
    const seen = new Set<string>();
    for (const name of names) {
      if (seen.has(name)) conflicts.push({ where: `${kind} ${name}`, message: `listed twice in the file; keep one` });
      seen.add(name);
    }
  };
  duplicates("models", document.models.map((entry) => entry.name));
  duplicates("keys", document.keys.map((key) => key.name));
  duplicates("tokens", document.tokens.map((token) => token.name));
  const models: ModelEntry[] = [];
  const unchangedModels: string[] = [];
  for (const entry of document.models) {
    const existing = target.runtime.find((candidate) => candidate.name === entry.name);
    if (target.isDeclared(entry.name)) {
      conflicts.push({ where: `models ${entry.name}`, message: `declared in ${target.declaredIn} on this server; take it out of the file, or out of ${target.declaredIn}` });
    } else if (existing === undefined) models.push(entry);
    else if (isDeepStrictEqual(existing, entry)) unchangedModels.push(entry.name);
    else conflicts.push({ where: `models ${entry.name}`, message: `a runtime model of that name exists here with another entry; remove it here (\`llmgw ctl model remove ${entry.name}\`) or rename it in the file` });
  }
  const keys: ExportedKey[] = [];
  const unchangedKeys: string[] = [];
  for (const key of document.keys) {
    const existing = target.keys.find((candidate) => candidate.name === key.name);
    if (existing === undefined) keys.push(key);
    else if (isDeepStrictEqual(existing, asExported(key))) unchangedKeys.push(key.name);
    else conflicts.push({ where: `keys ${key.name}`, message: `a gateway key of that name exists here with other limits or models (names stay taken after a revocation); rename it in the file` });
  }
  const tokens: ExportedToken[] = [];
  const unchangedTokens: string[] = [];
  for (const token of document.tokens) {
    const existing = target.tokens.find((candidate) => candidate.name === token.name);
    if (existing === undefined) tokens.push(token);
    else if (existing.role === token.role) unchangedTokens.push(token.name);
    else conflicts.push({ where: `tokens ${token.name}`, message: `a ${existing.role} token of that name exists here; revoke it here (\`llmgw ctl token revoke ${token.name}\`) or rename it in the file` });
  }
  return { models, unchangedModels, keys, unchangedKeys, tokens, unchangedTokens, conflicts };
}

/**
 * `ctl export` and `ctl import`: the catalog and the access an operator made
 * at runtime, moved between servers. An import is one transaction under the
 * catalog lock: it checks every name and the catalog it would make first, and
 * writes all of it or nothing. Entries already present and equal are left as
 * they are, so importing the same file twice changes nothing the second time.
 */
export class CatalogTransferService {
  constructor(
    private readonly store: Store,
    private readonly catalog: CatalogService,
    /** Tells the gateway of new keys at once, as creating one by hand does. */
    private readonly onKeysChanged: () => Promise<void> = async () => undefined,
  ) {}

  async export(): Promise<CatalogExport> {
    const db = this.store.db;
    const models = await listModelEntries(db);
    const versions = [];
    for (const entry of models) {
      for (const change of await listVersionChanges(db, entry.name)) {
        versions.push({ model: change.model, from: change.from, to: change.to, kind: change.kind, actor: change.actor, actor_user: change.actor_user, at: change.at });
      }
    }
    const keys = (await listGatewayKeys(db)).map(keyMetadata).sort((a, b) => a.name.localeCompare(b.name));
    const tokens = (await listTokens(db)).map((token) => ({ name: token.name, role: token.role })).sort((a, b) => a.name.localeCompare(b.name));
    return { version: catalogExportVersion, models, versions, keys, tokens };
  }

  async previewImport(document: CatalogExport): Promise<DryRunAnswer<CatalogImportResult>> {
    const plan = await this.plan(this.store.db, document);
    return dryRunAnswer(resultOf(plan, () => null, () => null), changesOf(plan));
  }

  async import(document: CatalogExport, actor: Actor): Promise<CatalogImportResult> {
    const result = await this.store.withCatalogLock(async (transaction) => {
      const plan = await this.plan(transaction, document);
      const at = new Date().toISOString();
      for (const entry of plan.models) {
        await insertModelEntry(transaction, entry, at);
        await insertAuditEvent(transaction, { at, actor: actor.token, actor_user: actor.user, action: "model-imported", model: entry.name, before: null, after: entry });
      }
      const added = new Set(plan.models.map((entry) => entry.name));
      for (const change of document.versions.filter((version) => added.has(version.model))) {
        await insertVersionChange(transaction, change);
      }
      const keySecrets = new Map<string, string | null>();
      for (const key of plan.keys) {
        // A revoked key gets a hash of a secret nobody holds: it stays revoked, its name taken.
        const secret = newToken("key");
        keySecrets.set(key.name, key.revoked_at === null ? secret : null);
        await insertGatewayKey(transaction, {
          id: randomUUID(),
          name: key.name,
          hash: hashToken(secret),
          models: key.models,
          rpm: key.rpm,
          tpm: key.tpm,
          maxInFlight: key.max_in_flight ?? null,
          expiresAt: key.expires_at,
          createdAt: at,
          revokedAt: key.revoked_at,
        });
        await insertAuditEvent(transaction, { at, actor: actor.token, actor_user: actor.user, action: "gateway-key-imported", model: null, before: null, after: key });
      }
      const tokenSecrets = new Map<string, string>();
      for (const token of plan.tokens) {
        const secret = newToken(token.role);
        tokenSecrets.set(token.name, secret);
        await insertToken(transaction, { id: randomUUID(), name: token.name, role: token.role, hash: hashToken(secret) }, at);
        await insertAuditEvent(transaction, { at, actor: actor.token, actor_user: actor.user, action: "token-imported", model: null, before: null, after: token });
      }
      return resultOf(plan, (name) => keySecrets.get(name) ?? null, (name) => tokenSecrets.get(name) ?? null);
    });
    if (result.keys.created.length > 0) await this.onKeysChanged();
    return result;
  }

  /** Reads the target's state and decides; refuses with every conflict at once, and with the catalog's own refusal. */
  private async plan(db: Kysely<Database>, document: CatalogExport): Promise<ImportPlan> {
    const runtime = await listModelEntries(db);
    const keys = (await listGatewayKeys(db)).map(keyMetadata);
    const tokens = await listTokens(db);
    const plan = planImport(document, { runtime, keys, tokens, isDeclared: (name) => this.catalog.isDeclared(name), declaredIn: this.catalog.declaredIn });
    if (plan.conflicts.length > 0) {
      throw new DomainError(
        "import_conflict",
        `the import would collide with ${plan.conflicts.length} name${plan.conflicts.length === 1 ? "" : "s"} on this server: ${plan.conflicts.map((conflict) => conflict.where).join(", ")}; nothing was imported`,
        "Resolve each as its line says (remove or rename on one side), then import again; entries equal on both sides are left as they are.",
        plan.conflicts,
      );
    }
    // The whole catalog it would make, fallbacks, aliases and engine rules included, before anything is written.
    this.catalog.buildWith([...runtime, ...plan.models]);
    return plan;
  }
}

function resultOf(plan: ImportPlan, keySecret: (name: string) => string | null, tokenSecret: (name: string) => string | null): CatalogImportResult {
  return {
    models: { added: plan.models.map((entry) => entry.name), unchanged: [...plan.unchangedModels] },
    keys: { created: plan.keys.map((key) => ({ name: key.name, key: keySecret(key.name) })), unchanged: [...plan.unchangedKeys] },
    tokens: { created: plan.tokens.map((token) => ({ name: token.name, role: token.role, token: tokenSecret(token.name) })), unchanged: [...plan.unchangedTokens] },
  };
}

function changesOf(plan: ImportPlan): Change[] {
  return [
    ...plan.models.map((entry): Change => ({ kind: "catalog-write", model: entry.name, summary: `add the runtime model ${entry.name}` })),
    ...plan.keys.map((key): Change => ({ kind: "key-create", summary: `create the gateway key ${key.name}${key.revoked_at === null ? " (a new secret, shown once by the real import)" : ", revoked as it was"}` })),
    ...plan.tokens.map((token): Change => ({ kind: "token-create", summary: `create the ${token.role} token ${token.name} (a new secret, shown once by the real import)` })),
  ];
}
