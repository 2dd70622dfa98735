import { type Actor, resolveModel, formatDuration, entryAtRevision, revisionedRepo } from "../catalog/index.js";
import { DomainError, DeclaredInFile } from "../errors/index.js";
import {
  type ArmCounts,
  type ArmName,
  type ArmView,
  type CanaryState,
  type CanaryView,
  type ReplicaView,
  dryRunAnswer,
  type Change,
  type DryRunAnswer,
} from "../protocol/index.js";
import { canaryVerdict, type ChangeToPreview } from "../reconcile/index.js";
import {
  insertAuditEvent,
  insertVersionChange,
  findCanary,
  listCanaries,
  makeCanaryReplicasStable,
  putCanary,
  updateCanary,
  type CanaryRow,
  type Store,
  insertEvents,
  updateModelStatus,
} from "../store/index.js";
import type { CatalogService } from "./catalog-service.js";
import { catalogWriteChange } from "./catalog-write-change.js";

export interface CanaryStart {
  readonly revision: string;
  readonly weight: number;
  readonly replicas: number;
}

export interface CanaryGateChange {
  readonly max_error_rate: number | null;
  readonly max_p95_ms: number | null;
  readonly min_requests: number;
  readonly window_ms: number;
}

export interface CanaryParts {
  readonly store: Store;
  readonly catalog: CatalogService;
  readonly replicas: (model: string) => Promise<ReplicaView[]>;
  /** An arm's counts since a time: this server's gateway's own, with what other gateways reported. */
  /** Counts over slots ending after `sinceMs` that began at or after `notBeforeMs` (the canary's start). */
  readonly counts: (model: string, arm: ArmName, sinceMs: number, notBeforeMs: number) => Promise<ArmCounts>;
  /** Asks the reconciler for a pass soon (it acts on a requested promotion or abort at the start of its pass). */
  readonly wake: () => void;
  readonly now?: () => number;
  /** What the reconciler would do after a change, for dry runs; without it a dry run shows the canary's own change alone. */
  readonly preview?: (change: ChangeToPreview) => Promise<Change[]>;
}

/** A gate's decision is made in the name of the gate, not of whoever started the canary. */
const gateActor: Actor = { token: "gate", user: null };

/** How long a hand promote or abort waits for the reconciler to carry it out before answering with the state it is in. */
const settleWaitMs = 15_000;

const active: readonly CanaryState[] = ["running", "promoting", "aborting"];

function isActive(row: CanaryRow | undefined): row is CanaryRow {
  return row !== undefined && active.includes(row.state as CanaryState);
}

/**
 * Canaries: a model's next revision on a few replicas beside the stable ones,
 * given a share of its traffic, then promoted (the catalog moves to the
 * revision and the stable replicas roll to it) or aborted (its replicas
 * withdrawn). Promotion and abort are carried out only at the start of a
 * reconcile pass (`settle`), so they never race the reconciler's own reading
 * of which replica belongs to which arm; a hand promote or abort asks for it
 * and waits for the pass.
 */
/** How often a running gated canary's numbers are looked at. */
const gateLookEveryMs = 1000;

export class CanaryService {
  readonly #now: () => number;

  constructor(private readonly parts: CanaryParts) {
    this.#now = parts.now ?? Date.now;
  }

  start(name: string, start: CanaryStart, actor: Actor): Promise<CanaryView>;
  /** With `dryRun`: the same checks, the canary it would start and the replicas its arm would place, writing nothing. */
  start(name: string, start: CanaryStart, actor: Actor, dryRun: boolean): Promise<CanaryView | DryRunAnswer<CanaryView>>;
  async start(name: string, start: CanaryStart, actor: Actor, dryRun = false): Promise<CanaryView | DryRunAnswer<CanaryView>> {
    const { store, catalog } = this.parts;
    const model = await catalog.get(name);
    // A promotion writes the catalog entry: a model declared in the file would have it undone at the next start.
    if (model.source === "file") throw new DeclaredInFile(name, "starting a canary (its promotion changes the entry)", catalog.declaredIn);
    if (model.entry.external) {
      throw new DomainError("invalid_input", `${name} is an external model: it has no replicas to try a revision on`, "Canaries are for models with profiles.");
    }
    const previous = await findCanary(store.db, name);
    if (isActive(previous)) {
      throw new DomainError(
        "canary_running",
        `${name} already has a canary of revision ${previous.revision} (${previous.state})`,
        `Promote it (\`llmgw ctl model promote ${name}\`) or abort it (\`llmgw ctl model abort ${name}\`) first.`,
      );
    }
    const current = revisionedRepo(model.entry)?.revision ?? null;
    if (current === start.revision) {
      throw new DomainError("invalid_input", `${name} already runs revision ${start.revision}`, "Name another revision with --to (`llmgw ctl model updates` lists newer ones).");
    }
    // Refuses a model with no hub repository to move, naming the fix; and checks the entry at that revision resolves.
    resolveModel(entryAtRevision(model.entry, start.revision), model.source);
    const at = new Date(this.#now()).toISOString();
    const row: CanaryRow = {
      model: name,
      revision: start.revision,
      from_revision: current,
      weight: start.weight,
      replicas: start.replicas,
      max_error_rate: null,
      max_p95_ms: null,
      min_requests: null,
      window_ms: null,
      state: "running",
      decision: null,
      started_at: at,
      ended_at: null,
      actor: actor.token,
      actor_user: actor.user,
      ended_by: null,
    };
    if (dryRun) {
      const others = (await listCanaries(store.db)).filter((candidate) => candidate.model !== name);
      const started: Change = {
        kind: "canary-start",
        summary: `start a canary of ${name} at revision ${start.revision} (from ${current ?? "an unnamed revision"}): ${start.replicas} replica${start.replicas === 1 ? "" : "s"}, ${start.weight}% of requests`,
        model: name,
      };
      return dryRunAnswer(await this.view(row), [started, ...(await this.previewReplicas({ canaries: [...others, row] }))]);
    }
    await store.withCatalogLock(async (transaction) => {
      await putCanary(transaction, row);
      await insertAuditEvent(transaction, { at, actor: actor.token, actor_user: actor.user, action: "model-canary-started", model: name, before: null, after: canaryRecord(row) });
    });
    await insertEvents(store.db, [
      {
        at,
        kind: "canary-started",
        model: name,
        replica: null,
        node: null,
        message: `${actor.token} starts a canary of ${name} at revision ${start.revision} (from ${current ?? "an unnamed revision"}): ${start.replicas} replica${start.replicas === 1 ? "" : "s"}, ${start.weight}% of requests`,
      },
    ]);
    this.parts.wake();
    return await this.view(row);
  }

  setGate(name: string, gate: CanaryGateChange, actor: Actor): Promise<CanaryView>;
  setGate(name: string, gate: CanaryGateChange, actor: Actor, dryRun: boolean): Promise<CanaryView | DryRunAnswer<CanaryView>>;
  async setGate(name: string, gate: CanaryGateChange, actor: Actor, dryRun = false): Promise<CanaryView | DryRunAnswer<CanaryView>> {
    const { store } = this.parts;
    const before = await this.running(name, "set a gate on");
    const change = { max_error_rate: gate.max_error_rate, max_p95_ms: gate.max_p95_ms, min_requests: gate.min_requests, window_ms: gate.window_ms };
    const after = { ...before, ...change };
    if (dryRun) return dryRunAnswer(await this.view(after), [{ kind: "canary-gate", summary: `set the gate of ${name}'s canary: ${describeGate(after)}`, model: name }]);
    const at = new Date(this.#now()).toISOString();
    await store.withCatalogLock(async (transaction) => {
      await updateCanary(transaction, name, change);
      await insertAuditEvent(transaction, { at, actor: actor.token, actor_user: actor.user, action: "model-canary-gated", model: name, before: canaryRecord(before), after: canaryRecord(after) });
    });
    await insertEvents(store.db, [{ at, kind: "canary-gated", model: name, replica: null, node: null, message: `${actor.token} sets the gate of ${name}'s canary: ${describeGate(after)}` }]);
    this.parts.wake();
    return await this.view(after);
  }

  /** Asks for a promotion or an abort by hand; answers once the reconciler has carried it out (or with the state it is in after a wait). */
  end(name: string, ending: "promote" | "abort", actor: Actor): Promise<CanaryView>;
  /**
   * With `dryRun`: what the pass would do with the promotion or abort. A
   * promotion moves the entry to the canary's revision, keeps the canary's
   * replicas as stable ones and rolls the old stable ones by surge; an abort
   * withdraws the canary's replicas.
   */
  end(name: string, ending: "promote" | "abort", actor: Actor, dryRun: boolean): Promise<CanaryView | DryRunAnswer<CanaryView>>;
  async end(name: string, ending: "promote" | "abort", actor: Actor, dryRun = false): Promise<CanaryView | DryRunAnswer<CanaryView>> {
    const { store } = this.parts;
    const row = await this.running(name, ending);
    if (dryRun) return await this.previewEnd(row, ending);
    await updateCanary(store.db, name, { state: ending === "promote" ? "promoting" : "aborting", ended_by: actor.token, decision: `${ending === "promote" ? "promoted" : "aborted"} by hand by ${actor.token}${actor.user ? ` (${actor.user})` : ""}` });
    this.parts.wake();
    const deadline = this.#now() + settleWaitMs;
    let latest = row;
    while (this.#now() < deadline) {
      latest = (await findCanary(store.db, name)) ?? latest;
      if (latest.state === "promoted" || latest.state === "aborted") break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return await this.view(latest);
  }

  async list(): Promise<CanaryView[]> {
    return await Promise.all((await listCanaries(this.parts.store.db)).map((row) => this.view(row)));
  }

  async get(name: string): Promise<CanaryView> {
    const row = await findCanary(this.parts.store.db, name);
    if (!row) throw new DomainError("canary_not_found", `${name} has had no canary`, `Start one with \`llmgw ctl model canary ${name} --to REV --weight PCT\`.`);
    return await this.view(row);
  }

  /**
   * The reconciler's pass hook: carries out requested promotions and aborts,
   * and asks each gated canary's gate about its numbers over the window.
   * Answers when to ask again: a gate's verdict moves with the traffic its
   * arms carry, which no write announces, so a running gated canary is
   * looked at every second.
   */
  async settle(nowMs: number): Promise<number | undefined> {
    let askAgainAt: number | undefined;
    for (const row of await listCanaries(this.parts.store.db)) {
      if (row.state === "promoting") await this.promote(row, row.decision ?? "promoted by hand", { token: row.ended_by ?? "unknown", user: null }, nowMs);
      else if (row.state === "aborting") await this.abort(row, row.decision ?? "aborted by hand", { token: row.ended_by ?? "unknown", user: null }, nowMs);
      else if (row.state === "running" && row.min_requests !== null && row.window_ms !== null) {
        const startedMs = Date.parse(row.started_at);
        const counts = await this.parts.counts(row.model, "canary", Math.max(startedMs, nowMs - row.window_ms), startedMs);
        const verdict = canaryVerdict({ maxErrorRate: row.max_error_rate, maxP95Ms: row.max_p95_ms, minRequests: row.min_requests, windowMs: row.window_ms }, counts, nowMs - startedMs);
        if (verdict.decision === "promote") await this.promote({ ...row, ended_by: "gate" }, `promoted by its gate: ${verdict.reason}`, gateActor, nowMs);
        if (verdict.decision === "abort") await this.abort({ ...row, ended_by: "gate" }, `aborted by its gate: ${verdict.reason}`, gateActor, nowMs);
        if (verdict.decision === "hold") askAgainAt = nowMs + gateLookEveryMs;
      }
    }
    return askAgainAt;
  }

  /**
   * The catalog moves to the canary's revision (audited with the entry before
   * and after), the canary's replicas become stable ones, and the old stable
   * replicas are rolled by surge: each withdrawn once enough replicas at the
   * new revision serve.
   */
  private async promote(row: CanaryRow, decision: string, actor: Actor, nowMs: number): Promise<void> {
    const { store, catalog } = this.parts;
    const at = new Date(nowMs).toISOString();
    try {
      // A version history row with the move, so `ctl model rollback` after a promotion goes back to what stable ran.
      await catalog.replaceEntry(row.model, "model-canary-promoted", `moving it to revision ${row.revision}`, actor, (entry) => entryAtRevision(entry, row.revision), async (transaction, before) => {
        const from = revisionedRepo(before)?.revision ?? row.from_revision ?? "unknown";
        await insertVersionChange(transaction, { model: row.model, from, to: row.revision, kind: "canary-promote", actor: actor.token, actor_user: actor.user, at });
      });
    } catch (error) {
      // The entry can no longer move (changed or removed since): stable keeps serving, the canary ends.
      await this.abort(row, `could not be promoted, so it was aborted: ${(error as Error).message}`, actor, nowMs);
      return;
    }
    const kept = await makeCanaryReplicasStable(store.db, row.model, at);
    await updateModelStatus(store.db, row.model, { restart_before: at, restart_in_place: 0 }, at);
    await updateCanary(store.db, row.model, { state: "promoted", decision, ended_at: at, ended_by: row.ended_by });
    const numbers = await this.numbers(row);
    await insertEvents(store.db, [
      { at, kind: "canary-promoted", model: row.model, replica: null, node: null, message: `the canary of ${row.model} at revision ${row.revision} was ${decision} (${numbers})` },
      {
        at,
        kind: "model-restarting",
        model: row.model,
        replica: null,
        node: null,
        message: `${row.model} rolls its stable replicas to revision ${row.revision}; ${kept} canary replica${kept === 1 ? "" : "s"} now serve${kept === 1 ? "s" : ""} as stable`,
      },
    ]);
  }

  /** Back to stable: the canary's replicas leave routing at once (the reconciler withdraws them this pass) and stop after draining. */
  private async abort(row: CanaryRow, decision: string, actor: Actor, nowMs: number): Promise<void> {
    const { store } = this.parts;
    const at = new Date(nowMs).toISOString();
    const after: CanaryRow = { ...row, state: "aborted", decision, ended_at: at };
    await updateCanary(store.db, row.model, { state: "aborted", decision, ended_at: at, ended_by: row.ended_by });
    await insertAuditEvent(store.db, { at, actor: actor.token, actor_user: actor.user, action: "model-canary-aborted", model: row.model, before: canaryRecord(row), after: canaryRecord(after) });
    await insertEvents(store.db, [
      { at, kind: "canary-aborted", model: row.model, replica: null, node: null, message: `the canary of ${row.model} at revision ${row.revision} was ${decision} (${await this.numbers(row)})` },
    ]);
  }

  private async running(name: string, doing: string): Promise<CanaryRow> {
    const row = await findCanary(this.parts.store.db, name);
    if (row?.state !== "running") {
      throw new DomainError(
        "canary_not_found",
        row === undefined ? `${name} has no canary to ${doing}` : `${name}'s canary of revision ${row.revision} is ${row.state}: there is none running to ${doing}`,
        `Start one with \`llmgw ctl model canary ${name} --to REV --weight PCT\`.`,
      );
    }
    return row;
  }

  /** Both arms' numbers since the canary started, for events. */
  private async numbers(row: CanaryRow): Promise<string> {
    const since = Date.parse(row.started_at);
    const describe = async (arm: ArmName) => {
      const counts = await this.parts.counts(row.model, arm, since, since);
      return `${arm} ${counts.errors}/${counts.requests} errors${counts.p95_ms === null ? "" : `, p95 ${counts.p95_ms} ms`}`;
    };
    return `${await describe("canary")}; ${await describe("stable")}`;
  }

  private async previewReplicas(change: ChangeToPreview): Promise<Change[]> {
    return (await this.parts.preview?.(change)) ?? [];
  }

  private async previewEnd(row: CanaryRow, ending: "promote" | "abort"): Promise<DryRunAnswer<CanaryView>> {
    const others = (await listCanaries(this.parts.store.db)).filter((candidate) => candidate.model !== row.model);
    const outcome = await this.view({ ...row, state: ending === "promote" ? "promoted" : "aborted", decision: `${ending === "promote" ? "promoted" : "aborted"} by hand` });
    if (ending === "abort") {
      const ended: Change = { kind: "canary-abort", summary: `abort the canary of ${row.model} at revision ${row.revision}: its replicas leave routing and stop`, model: row.model };
      return dryRunAnswer(outcome, [ended, ...(await this.previewReplicas({ canaries: others }))]);
    }
    const preview = await this.parts.catalog.preview(row.model, `moving it to revision ${row.revision}`, (entry) => entryAtRevision(entry, row.revision));
    const replicas = await this.previewReplicas({ models: preview.catalog.models, canaries: others, restart: { model: row.model, inPlace: false }, promote: row.model });
    return dryRunAnswer(outcome, [catalogWriteChange(row.model, preview.before, preview.after), ...replicas]);
  }

  private async view(row: CanaryRow): Promise<CanaryView> {
    const since = Date.parse(row.started_at);
    const replicas = await this.parts.replicas(row.model);
    const arm = async (name: ArmName): Promise<ArmView> => {
      const counts = await this.parts.counts(row.model, name, since, since);
      const ready = replicas.filter((replica) => replica.state === "ready" && (replica.arm === "canary") === (name === "canary")).length;
      return { ...counts, error_rate: counts.requests === 0 ? null : counts.errors / counts.requests, ready_replicas: ready };
    };
    return {
      model: row.model,
      revision: row.revision,
      from_revision: row.from_revision,
      weight: row.weight,
      replicas: row.replicas,
      state: row.state as CanaryState,
      decision: row.decision,
      started_at: row.started_at,
      ended_at: row.ended_at,
      actor: row.actor,
      gate:
        row.min_requests === null || row.window_ms === null
          ? null
          : { max_error_rate: row.max_error_rate, max_p95_ms: row.max_p95_ms, min_requests: row.min_requests, window: formatDuration(row.window_ms) },
      arms: { stable: await arm("stable"), canary: await arm("canary") },
    };
  }
}

/** What the audit log keeps of a canary: its settings and state, not the live numbers. */
function canaryRecord(row: CanaryRow): Record<string, unknown> {
  return {
    revision: row.revision,
    from_revision: row.from_revision,
    weight: row.weight,
    replicas: row.replicas,
    gate: row.min_requests === null ? null : { max_error_rate: row.max_error_rate, max_p95_ms: row.max_p95_ms, min_requests: row.min_requests, window_ms: row.window_ms },
    state: row.state,
    decision: row.decision,
  };
}

function describeGate(row: CanaryRow): string {
  const limits = [
    row.max_error_rate === null ? undefined : `error rate at most ${(row.max_error_rate * 100).toFixed(1)}%`,
    row.max_p95_ms === null ? undefined : `p95 at most ${row.max_p95_ms} ms`,
  ].filter((text) => text !== undefined);
  return `${limits.join(", ") || "no limit"}, over at least ${row.min_requests ?? 0} requests, window ${formatDuration(row.window_ms ?? 0)}`;
}
