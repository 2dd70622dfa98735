import type { ModelClass, ReconcileSettings } from "../catalog/index.js";
import type { Change } from "../protocol/index.js";
import { diff } from "./diff.js";
import type { Action, Desired, DesiredModel, Observed, ObservedReplica } from "./types.js";

/** What a started replica would run with, as its engine driver and the planner say; the reconciler supplies it. */
export interface StartFacts {
  readonly modelClass: ModelClass;
  readonly memoryBytes: number;
  readonly cpuCores: number;
  readonly engineArgs?: readonly string[] | undefined;
  readonly kvBytesPerCard?: number | undefined;
}

export interface PreviewInput {
  /** What should run now and what runs now: what the fleet would do anyway, which a change is not credited with. */
  readonly before: { readonly desired: Desired; readonly observed: Observed };
  /** The same with the change made (a would-be catalog, a restart asked for, a node cordoned). */
  readonly after: { readonly desired: Desired; readonly observed: Observed };
  readonly settings: ReconcileSettings;
  readonly startFacts: (model: string, profile: string, cards: readonly number[]) => StartFacts;
}

/** Actions that change what runs where; the rest (status, demand) are bookkeeping. */
type Effect =
  | { readonly kind: "start"; readonly action: Extract<Action, { kind: "start" }> }
  | { readonly kind: "withdraw"; readonly action: Extract<Action, { kind: "withdraw" | "abandon" }>; readonly replica: ObservedReplica }
  | { readonly kind: "unplaceable"; readonly model: string; readonly reason: string };

/**
 * Enough passes for an in-place restart of every replica (a stop, then a
 * start, each) and a preemption before it; a fleet that has not settled by
 * then is reported as far as it got.
 */
const passesFor = (observed: Observed) => 2 * observed.replicas.length + 8;

/**
 * The reconciler's own passes, run forward on a copy of the fleet with every
 * action taken at once: a start becomes a ready replica, a withdrawal frees
 * its cards. So a surge shows the new replicas first and the old ones leaving
 * after, an in-place restart shows each stop before its start, and a
 * preemption shows the victims before the start they make room for. Pure: the
 * same `diff` and placement the loop calls, no clock, no I/O.
 */
function simulate(desired: Desired, observed: Observed, settings: ReconcileSettings, startFacts: PreviewInput["startFacts"]): Effect[] {
  const effects: Effect[] = [];
  let replicas = [...observed.replicas];
  let models = [...desired.models];
  let started = 0;
  // A refusal already on record is not said again by the diff (once per change): it stands until a pass places the model.
  const unplaced = new Map<string, string>(desired.models.flatMap((model) => (!model.canary && model.placement?.state === "unplaceable" ? [[model.name, model.placement.reason ?? "no node fits"] as const] : [])));
  for (let pass = 0; pass < passesFor(observed); pass++) {
    const actions = diff({ models }, { ...observed, replicas }, settings);
    let moved = false;
    for (const action of actions) {
      switch (action.kind) {
        case "start": {
          moved = true;
          unplaced.delete(action.model);
          effects.push({ kind: "start", action });
          const facts = startFacts(action.model, action.profile, action.cards);
          started += 1;
          replicas.push({
            id: `new-${started}`,
            model: action.model,
            profile: action.profile,
            node: action.node,
            cards: action.cards,
            state: "ready",
            managed: true,
            placedAtMs: observed.nowMs,
            withdrawnAtMs: undefined,
            inFlight: undefined,
            reason: null,
            memoryBytes: facts.memoryBytes,
            cpuCores: facts.cpuCores,
            ...(action.canary ? { arm: "canary" as const } : {}),
          });
          break;
        }
        case "withdraw":
        case "abandon": {
          moved = true;
          const replica = replicas.find((candidate) => candidate.id === action.id);
          if (replica) effects.push({ kind: "withdraw", action, replica });
          replicas = replicas.filter((candidate) => candidate.id !== action.id);
          break;
        }
        case "record-failure":
        case "stop":
          moved = true;
          replicas = replicas.filter((candidate) => candidate.id !== action.id);
          break;
        case "placement":
          models = models.map((model) => (model.name === action.model && !model.canary ? { ...model, placement: { state: action.state, reason: action.reason } } : model));
          if (action.state === "unplaceable") unplaced.set(action.model, action.reason ?? "no node fits");
          else unplaced.delete(action.model);
          break;
        case "restart-finished":
          models = models.map((model): DesiredModel => (model.name === action.model && !model.canary ? { ...model, restartBeforeMs: undefined, restartInPlace: false } : model));
          break;
        default:
          break;
      }
    }
    if (!moved) break;
  }
  for (const [model, reason] of unplaced) effects.push({ kind: "unplaceable", model, reason });
  return effects;
}

function keyOf(effect: Effect): string {
  switch (effect.kind) {
    case "start":
      return `start ${effect.action.model} ${effect.action.profile} ${effect.action.node} ${effect.action.cards.join(",")} ${effect.action.canary?.revision ?? ""}`;
    case "withdraw":
      return `withdraw ${effect.action.id}`;
    case "unplaceable":
      return `unplaceable ${effect.model} ${effect.reason}`;
  }
}

const cardsText = (cards: readonly number[]) => (cards.length === 0 ? "no cards (CPU)" : `card${cards.length === 1 ? "" : "s"} ${cards.join(",")}`);
const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GiB`;

function describe(effect: Effect, input: PreviewInput, classOf: (model: string) => ModelClass | undefined): Change {
  switch (effect.kind) {
    case "start": {
      const { action } = effect;
      const facts = input.startFacts(action.model, action.profile, action.cards);
      const kv = facts.kvBytesPerCard !== undefined ? `, ${gib(facts.kvBytesPerCard)} of KV cache per card` : "";
      const arm = action.canary ? ` (canary at ${action.canary.revision})` : "";
      return {
        kind: "replica-start",
        summary: `start a replica of ${action.model}${arm} (${action.profile}, ${facts.modelClass}) on ${action.node}, ${cardsText(action.cards)}${kv}`,
        model: action.model,
        node: action.node,
        cards: [...action.cards],
        class: facts.modelClass,
        ...(facts.engineArgs ? { engine_args: [...facts.engineArgs] } : {}),
        ...(facts.kvBytesPerCard !== undefined ? { kv_bytes_per_card: facts.kvBytesPerCard } : {}),
      };
    }
    case "withdraw": {
      const { action, replica } = effect;
      const preempted = action.kind === "withdraw" && action.preemptedFor !== undefined;
      const restarted = action.kind === "withdraw" && action.reason.startsWith("restarting ");
      const modelClass = classOf(replica.model);
      return {
        kind: preempted ? "replica-preempt" : restarted ? "replica-restart" : "replica-stop",
        summary: `replica ${replica.id} of ${replica.model}${modelClass ? ` (${modelClass})` : ""} on ${replica.node}, ${cardsText(replica.cards)}, leaves routing and stops: ${action.reason}`,
        model: replica.model,
        replica: replica.id,
        node: replica.node,
        cards: [...replica.cards],
        ...(modelClass ? { class: modelClass } : {}),
      };
    }
    case "unplaceable":
      return { kind: "model-unplaceable", summary: `${effect.model} would not be placed: ${effect.reason}`, model: effect.model };
  }
}

/**
 * What a change would make the reconciler do: its passes run forward on the
 * state after the change, less what they would do on the state before it (a
 * model already waiting for room is not this change's doing). Replicas the
 * simulation itself started carry no id, since none exists yet.
 */
export function previewChanges(input: PreviewInput): Change[] {
  const anyway = new Map<string, number>();
  for (const effect of simulate(input.before.desired, input.before.observed, input.settings, input.startFacts)) {
    const key = keyOf(effect);
    anyway.set(key, (anyway.get(key) ?? 0) + 1);
  }
  const classes = new Map<string, ModelClass>([...input.before.desired.models, ...input.after.desired.models].map((model) => [model.name, model.modelClass]));
  for (const model of input.after.desired.models) classes.set(model.name, model.modelClass);
  const changes: Change[] = [];
  for (const effect of simulate(input.after.desired, input.after.observed, input.settings, input.startFacts)) {
    const key = keyOf(effect);
    const left = anyway.get(key) ?? 0;
    if (left > 0) {
      anyway.set(key, left - 1);
      continue;
    }
    const change = describe(effect, input, (model) => classes.get(model));
    // A replica the simulation started has no id yet: "new-1" would read as a real one.
    if (change.replica?.startsWith("new-")) {
      const { replica: _simulated, ...rest } = change;
      changes.push({ ...rest, summary: rest.summary.replace(`replica ${change.replica} `, "the new replica ") });
    } else changes.push(change);
  }
  return changes;
}
