import { hashToken } from "../../auth/index.js";
import type { GatewayKey as GatewayKeyRow } from "../../protocol/index.js";
import type { KeysBackend } from "./keys-backend.js";
import { GatewayRefusal } from "../wire/gateway-refusal.js";
import type { GatewayCaller, GatewayPolicy, UsageRecord } from "./gateway-policy.js";
import { SlidingWindow } from "./sliding-window.js";
import { chargeKeyLimits, type KeyLimits } from "./charge-key-limits.js";
import type { SharedKeyLimits } from "./shared-key-limits.js";
import { UsageBook, type UsageBookOptions } from "./usage-book.js";

export interface KeysPolicyOptions extends Omit<UsageBookOptions, "onBackgroundError"> {
  /**
   * How often keys are re-read from the store. A key revoked or created on
   * another server sharing Postgres takes effect here within this bound (plus
   * one query); changes made through this server's API apply at once.
   */
  readonly refreshIntervalMs?: number;
  /** Refresh and flush failures off the request path: logged, never thrown at a client. */
  readonly onBackgroundError?: (error: unknown, during: "refreshing gateway keys" | "writing usage") => void;
  /**
   * Where the rpm/tpm windows are kept when not in this process: a gateway
   * worker charges its primary, so all workers together keep a key's limit.
   * Keys without limits never leave the process.
   */
  readonly sharedLimits?: SharedKeyLimits;
}

export const defaultKeyRefreshMs = 2000;

interface KeyEntry {
  readonly row: GatewayKeyRow;
  readonly expiresAtMs: number | null;
  readonly limits: KeyLimits;
}

/**
 * The caller of one request. It carries what admit charged, so record can
 * replace the estimate with the tokens the engine reported: the gateway must
 * hand the object authenticate returned to admit and record.
 */
class KeyCaller implements GatewayCaller {
  chargedTokens = 0;
  countedRequest = false;
  readonly maxInFlight: number | null;
  constructor(
    readonly key: string,
    readonly allowedModels: readonly string[] | null,
    readonly entry: KeyEntry,
  ) {
    this.maxInFlight = entry.row.maxInFlight;
  }
}

const bearer = /^Bearer\s+(\S+)\s*$/i;
/**
 * Presented keys already hashed, so a busy client's key is hashed once, not
 * per request (SHA-256 was about 2% of the gateway's CPU under load). Only
 * the hash is looked up in the key table, so a revocation still lands at the
 * next refresh. Bounded: cleared when full, so junk keys cannot grow it.
 */
const hashMemoLimit = 4096;
const adminTokenPrefix = /^llmgw_(admin|read)_/;

/**
 * Gateway API keys: who may call, which models, how fast. Keys live in
 * memory and are refreshed off the request path, so authenticating costs a
 * hash and a map lookup and never waits on the store. Limits are sliding
 * 60-second windows (see SlidingWindow) kept per process (or, for the
 * workers of one gateway, in their primary): with several servers behind a
 * balancer, each enforces the limit on its own share.
 */
export class KeysPolicy implements GatewayPolicy {
  private keysByHash = new Map<string, KeyEntry>();
  private readonly limitsByName = new Map<string, KeyLimits>();
  private ledger!: UsageBook;
  private readonly now: () => number;
  private timers: NodeJS.Timeout[] = [];
  private refreshing: Promise<void> | undefined;
  private readonly hashes = new Map<string, string>();
  private readonly shared: SharedKeyLimits | undefined;

  private constructor(
    private readonly backend: KeysBackend,
    options: KeysPolicyOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.shared = options.sharedLimits;
  }

  /**
   * Loads the keys before the first request, then keeps them fresh and
   * writes usage in the background: to and from the store in a server
   * (storeKeysBackend), through the server's admin API in a standalone
   * gateway (httpKeysBackend).
   */
  static async start(backend: KeysBackend, options: KeysPolicyOptions = {}): Promise<KeysPolicy> {
    const policy = new KeysPolicy(backend, options);
    await policy.refresh();
    const report = options.onBackgroundError ?? (() => undefined);
    policy.ledger = await UsageBook.start((increments) => backend.writeUsage(increments), { ...options, now: policy.now, onBackgroundError: report });
    policy.timers = [setInterval(() => void policy.refresh().catch((error: unknown) => report(error, "refreshing gateway keys")), options.refreshIntervalMs ?? defaultKeyRefreshMs)];
    // Background work must not keep a finished process alive.
    for (const timer of policy.timers) timer.unref();
    return policy;
  }

  /** Re-reads the keys and swaps the table in whole; concurrent calls share one read. */
  refresh(): Promise<void> {
    this.refreshing ??= this.readKeys().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  authenticate(authorization: string | undefined): GatewayCaller {
    const match = authorization === undefined ? null : bearer.exec(authorization);
    if (!match) {
      throw new GatewayRefusal(401, "invalid_request_error", "missing_api_key", "No API key was sent. Send a gateway key as `Authorization: Bearer KEY` (the OpenAI SDK's apiKey); an administrator makes one with `llmgw ctl key create NAME`.");
    }
    const presented = match[1] as string;
    const entry = this.keysByHash.get(this.hashOf(presented));
    if (!entry) {
      throw new GatewayRefusal(
        401,
        "invalid_request_error",
        "invalid_api_key",
        adminTokenPrefix.test(presented)
          ? "That is an admin-API token; the gateway takes only gateway keys (llmgw_key_...). An administrator makes one with `llmgw ctl key create NAME`."
          : "The API key is not one this gateway issued. Check for a typo, or ask an administrator for a key (`llmgw ctl key create NAME`).",
      );
    }
    const { row } = entry;
    if (row.revokedAt !== null) {
      throw new GatewayRefusal(401, "invalid_request_error", "invalid_api_key", `API key "${row.name}" was revoked at ${row.revokedAt}. Ask an administrator for a new key.`);
    }
    if (entry.expiresAtMs !== null && this.now() >= entry.expiresAtMs) {
      throw new GatewayRefusal(401, "invalid_request_error", "invalid_api_key", `API key "${row.name}" expired at ${row.expiresAt}. Ask an administrator for a new key.`);
    }
    return new KeyCaller(row.name, row.models, entry);
  }

  admit(caller: GatewayCaller, name: string, estimatedTokens: number): Promise<void> | undefined {
    if (!(caller instanceof KeyCaller)) return undefined;
    const { row, limits } = caller.entry;
    if (caller.allowedModels !== null && !caller.allowedModels.includes(name)) {
      throw new GatewayRefusal(
        403,
        "permission_error",
        "model_not_allowed",
        `API key "${row.name}" may not use "${name}"; it may use: ${caller.allowedModels.join(", ") || "no model"}. An administrator can make a key for this model with \`llmgw ctl key create NAME --models ${name}\`.`,
      );
    }
    const tokens = Math.max(0, estimatedTokens);
    const countsRequest = !caller.countedRequest;
    const shared = this.shared;
    if (shared !== undefined && (row.rpm !== null || row.tpm !== null)) {
      // Another process keeps the windows (several workers share them): the request waits for its answer.
      return shared.charge(row, tokens, countsRequest).then(() => {
        if (countsRequest) caller.countedRequest = true;
        caller.chargedTokens += tokens;
      });
    }
    chargeKeyLimits(limits, row, tokens, countsRequest, this.now());
    if (countsRequest) caller.countedRequest = true;
    caller.chargedTokens += tokens;
    return undefined;
  }

  record(usage: UsageRecord): Promise<void> | undefined {
    const { caller } = usage;
    if (caller.key === null) return undefined;
    const actual = usage.promptTokens + usage.completionTokens;
    if (caller instanceof KeyCaller) {
      // The estimate counted at admit gives way to what the engine reported.
      const correction = actual - caller.chargedTokens;
      if (this.shared === undefined) caller.entry.limits.tokens.add(correction, this.now());
      else if (caller.entry.row.tpm !== null && correction !== 0) this.shared.correct(caller.key, correction);
      caller.chargedTokens = actual;
    }
    return this.ledger.count(caller.key, usage.model, { errors: usage.error ? 1 : 0, promptTokens: usage.promptTokens, completionTokens: usage.completionTokens });
  }

  /** Writes counted usage now (before a usage query, and at shutdown). */
  flushUsage(): Promise<void> {
    return this.ledger.flush();
  }

  /** Stops the background work and writes what is left; call after the server stopped taking requests. */
  async close(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    await this.ledger.close();
  }

  private hashOf(presented: string): string {
    let hash = this.hashes.get(presented);
    if (hash === undefined) {
      if (this.hashes.size >= hashMemoLimit) this.hashes.clear();
      hash = hashToken(presented);
      this.hashes.set(presented, hash);
    }
    return hash;
  }

  private async readKeys(): Promise<void> {
    const rows = await this.backend.readKeys();
    const next = new Map<string, KeyEntry>();
    for (const row of rows) {
      let limits = this.limitsByName.get(row.name);
      if (!limits) {
        limits = { requests: new SlidingWindow(), tokens: new SlidingWindow() };
        this.limitsByName.set(row.name, limits);
      }
      const parsed = row.expiresAt === null ? null : Date.parse(row.expiresAt);
      // An unreadable expiry fails closed: the key counts as expired.
      next.set(row.hash, { row, expiresAtMs: parsed === null ? null : Number.isNaN(parsed) ? 0 : parsed, limits });
    }
    this.keysByHash = next;
  }
}
