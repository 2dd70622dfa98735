import type { ModelClass, ReconcileSettings } from "../catalog/index.js";
import type { ReplicaDemand, Snapshot } from "../placement/index.js";
import { fleetSnapshot } from "./fleet-snapshot.js";
import { desiredCount, startingForDemand } from "./desired-count.js";
import { placeReplicas, preemptionGate, victimsFor } from "./placement-functions.js";
import type { ModelStanding } from "../placement/index.js";
import type { Action, Desired, DesiredModel, Observed, ObservedReplica } from "./types.js";
import { giveUpOrder, heldByPlacements, profilesForReplacement, promotingReplicas, promotions, restartOrder, surplusWithdrawal, worstPlaced, type PromotionCandidate } from "./profile-rank.js";

const classRank: Record<ModelClass, number> = { critical: 0, standard: 1, opportunistic: 2 };

/**
 * The name a model's replicas are counted and placed under: the model's own
 * for the stable arm, another for its canary, so a canary replica never
 * counts toward the stable replicas (and the stable count is not reduced).
 * A space cannot appear in a model name, so the two cannot collide.
 */
export function armGroup(model: string, canary: boolean): string {
  return canary ? `${model} (canary)` : model;
}

/** Gone and not coming back by itself: its cards are free. */
const isTerminal = (replica: ObservedReplica) => replica.state === "failed" || replica.state === "stopped";
const isReady = (replica: ObservedReplica) => replica.state === "ready";

/**
 * The reconciler's decision, pure: what should run (the catalog and what the
 * reconciler remembers per model) against what runs (nodes and replicas as
 * their agents report them), to the actions that close the gap. It is
 * level-triggered: it never asks what changed, so a missed or repeated
 * wake-up gives the same answer, and running it again after its actions took
 * effect gives none.
 */
export function diff(desired: Desired, observed: Observed, settings: ReconcileSettings): Action[] {
  const now = observed.nowMs;
  const actions: Action[] = [];
  const nodes = new Map(observed.nodes.map((node) => [node.name, node]));
  const models = new Map(desired.models.filter((model) => !model.canary).map((model) => [model.name, model]));
  const groups = new Map(desired.models.map((model) => [armGroup(model.name, model.canary !== undefined), model]));
  const withdrawn = new Set<string>();

  // A member whose leader is gone cannot serve and must not hold its cards: stopped, without a drain (it serves nothing).
  for (const stray of observed.strays ?? []) actions.push({ kind: "stop-member", id: stray.id, model: stray.model, node: stray.node });
  const strayModels = new Set((observed.strays ?? []).filter((stray) => stray.cards.length > 0).map((stray) => stray.model));

  for (const replica of observed.replicas) {
    const node = nodes.get(replica.node);
    if (replica.managed && replica.state === "failed") {
      // The same test the reconciler ends a failure streak by: a managed replica of the model that serves.
      const anotherServes = observed.replicas.some((other) => other.id !== replica.id && other.model === replica.model && other.managed && isReady(other));
      actions.push({ kind: "record-failure", id: replica.id, model: replica.model, node: replica.node, reason: replica.reason ?? "the engine failed without a reason", anotherServes });
      continue;
    }
    if (isTerminal(replica)) continue;
    if (replica.withdrawnAtMs !== undefined) {
      withdrawn.add(replica.id);
      // Draining already (the agent was told): nothing more to say to it.
      if (replica.state !== "draining" && replica.state !== "lost" && now - replica.withdrawnAtMs >= settings.withdrawDelayMs) {
        actions.push({ kind: "stop", id: replica.id, model: replica.model, node: replica.node });
      }
      continue;
    }
    if (!models.has(replica.model)) {
      // Removed from the catalog: out of routing first, engines stopped after.
      actions.push({ kind: "withdraw", id: replica.id, model: replica.model, node: replica.node, reason: `model ${replica.model} was removed from the catalog` });
      withdrawn.add(replica.id);
      continue;
    }
    if (replica.arm === "canary" && !groups.has(armGroup(replica.model, true))) {
      // Aborted or promoted away: a canary replica nobody wants any more leaves routing, then stops.
      actions.push({ kind: "withdraw", id: replica.id, model: replica.model, node: replica.node, reason: `the canary of ${replica.model} has ended` });
      withdrawn.add(replica.id);
      continue;
    }
    if (replica.managed && (node === undefined || node.state === "lost" || replica.state === "lost")) {
      actions.push({ kind: "abandon", id: replica.id, model: replica.model, node: replica.node, reason: `node ${replica.node} is lost` });
      withdrawn.add(replica.id);
      continue;
    }
    if (replica.state === "pending" && now - replica.placedAtMs >= settings.resumeAfterMs) {
      actions.push({ kind: "resume", id: replica.id, model: replica.model, node: replica.node });
    }
  }

  // Replicas that hold cards now: everything not gone (withdrawn ones too, until they stop).
  const snapshot: Snapshot = fleetSnapshot(observed, (model) => models.get(model)?.modelClass ?? "opportunistic");
  const held = snapshot.replicas;

  const demands: { demand: ReplicaDemand; model: DesiredModel; belowMin: boolean; withdrawing: boolean; evacuees: readonly ObservedReplica[]; restartProfile: string | undefined }[] = [];
  const promotionCandidates: PromotionCandidate[] = [];
  // Grouped once: a per-model scan of every replica is quadratic at thousands of models.
  const replicasOf = new Map<string, ObservedReplica[]>();
  for (const replica of observed.replicas) {
    const group = armGroup(replica.model, replica.arm === "canary");
    const list = replicasOf.get(group);
    if (list) list.push(replica);
    else replicasOf.set(group, [replica]);
  }
  for (const model of desired.models) {
    const group = armGroup(model.name, model.canary !== undefined);
    const ofModel = replicasOf.get(group) ?? [];
    const live = ofModel.filter((replica) => !isTerminal(replica) && !withdrawn.has(replica.id) && replica.state !== "lost");
    const outdated = live.filter(
      (replica) => replica.managed && (nodes.get(replica.node)?.draining === true || (model.restartBeforeMs !== undefined && replica.placedAtMs < model.restartBeforeMs)),
    );
    const current = live.filter((replica) => !outdated.includes(replica));
    const readyCurrent = current.filter(isReady).length;
    const inFlight = live.reduce((sum, replica) => sum + (replica.inFlight ?? 0), 0);
    const load = { ready: live.filter(isReady).length, live: live.length, inFlight };
    // Demand and load are the model's, told by its stable arm; a canary's count is fixed. A replica
    // still starting renews the demand too, so an on-demand model's idle time counts from when it is ready.
    if ((inFlight > 0 || (model.min === 0 && startingForDemand(load))) && !model.canary) actions.push({ kind: "demand-seen", model: model.name });
    const { count, busy } = desiredCount(model, load, now, settings.scaleDownCooldownMs);
    if (busy && !model.canary) actions.push({ kind: "busy", model: model.name });
    // A gang's members left after its leader stopped (being stopped now) free cards it may need too.
    const withdrawing = ofModel.some((replica) => withdrawn.has(replica.id) && !isTerminal(replica)) || (!model.canary && strayModels.has(model.name));

    // Too many: give up managed replicas (never one started by hand). A replica on its way up to take
    // a worse-placed one's place is not surplus: the worse one is, once it serves.
    const promoting = count > 0 ? promotingReplicas(model, current) : [];
    const surplus = current.length - count - promoting.length;
    if (surplus > 0) {
      const givenUp = current.filter((candidate) => candidate.managed && !promoting.includes(candidate)).sort(giveUpOrder(model)).slice(0, surplus);
      const kept = current.filter((candidate) => !givenUp.includes(candidate));
      for (const replica of givenUp) {
        actions.push({ kind: "withdraw", id: replica.id, model: model.name, node: replica.node, ...surplusWithdrawal(model, replica, kept, count) });
      }
    }

    // Outdated replicas (a restart, a draining node) go once enough new ones serve.
    if (outdated.length > 0) {
      if (model.restartInPlace && !nodes.get(outdated[0]?.node ?? "")?.draining) {
        // In place: one at a time, each stopped before its replacement starts.
        if (!withdrawing && current.every(isReady) && current.length >= count - outdated.length) {
          const first = [...outdated].sort(restartOrder(model))[0] as ObservedReplica;
          actions.push({ kind: "withdraw", id: first.id, model: model.name, node: first.node, reason: `restarting ${model.name} in place` });
        }
      } else {
        const stoppable = Math.max(0, Math.min(outdated.length, readyCurrent + outdated.length - count));
        for (const replica of [...outdated].sort(restartOrder(model)).slice(0, stoppable)) {
          const reason = nodes.get(replica.node)?.draining ? `node ${replica.node} is draining; its replacement is ready` : `restarting ${model.name}; its replacement is ready`;
          actions.push({ kind: "withdraw", id: replica.id, model: model.name, node: replica.node, reason });
        }
      }
    } else if (model.restartBeforeMs !== undefined && !withdrawing) {
      actions.push({ kind: "restart-finished", model: model.name });
    }

    // Too few: place the rest, unless its engines keep failing.
    const surging = model.restartInPlace ? outdated.length : 0;
    const need = count - current.length - surging;
    if (need > 0 && model.backoffUntilMs !== undefined && now < model.backoffUntilMs) continue;
    if (need > 0 && model.factsPending === true) continue;
    // A restart's replacements go on no worse a profile than the replicas they replace; a draining
    // node's replicas go wherever there is room (the operator asked for the machine), and move back later.
    // Those an in-place restart already withdrew count until they stop: their replacement starts meanwhile.
    const restartBefore = model.restartBeforeMs;
    const stoppingForRestart = restartBefore === undefined ? [] : ofModel.filter((replica) => withdrawn.has(replica.id) && !isTerminal(replica) && replica.managed && replica.placedAtMs < restartBefore);
    const restarted = [...outdated, ...stoppingForRestart].filter((replica) => nodes.get(replica.node)?.draining !== true);
    if (need > 0 && model.profiles.length > 0) {
      const profiles = profilesForReplacement(model, restarted);
      demands.push({
        demand: { model: group, modelClass: model.modelClass, count: need, profiles },
        model,
        belowMin: current.length < model.min,
        withdrawing,
        evacuees: outdated.filter((replica) => nodes.get(replica.node)?.draining === true),
        restartProfile: restarted.length > 0 ? profiles[profiles.length - 1]?.name : undefined,
      });
      continue;
    }
    // The model's placement state is its stable arm's.
    if (model.canary) continue;
    if (need <= 0 && count > 0 && model.placement?.state !== "placed") {
      actions.push({ kind: "placement", model: model.name, state: "placed", reason: null });
    } else if (count === 0 && model.placement !== undefined && model.placement.state !== "waiting") {
      actions.push({ kind: "placement", model: model.name, state: "waiting", reason: null });
    }
    // Served as asked and nothing under way: a replica on a worse profile may move back to a better one.
    // A replica that failed while another served carries no backoff (the model still serves): a profile whose
    // engine keeps failing would otherwise be tried again every pass. The backoff's ceiling spaces the tries.
    const backingOff = (model.backoffUntilMs !== undefined && now < model.backoffUntilMs) || (model.lastFailureAtMs !== undefined && now - model.lastFailureAtMs < settings.backoffMaxMs);
    // Nor while its files are being read (a server just started): the better profile would be priced by card count alone.
    if (need <= 0 && count > 0 && outdated.length === 0 && !withdrawing && promoting.length === 0 && surplus <= 0 && !backingOff && model.factsPending !== true) {
      const replica = worstPlaced(model, current);
      if (replica) promotionCandidates.push({ model, group, replica });
    }
  }

  // The most important first: critical before standard before opportunistic, a minimum before growth.
  demands.sort((a, b) => classRank[a.model.modelClass] - classRank[b.model.modelClass] || Number(b.belowMin) - Number(a.belowMin) || a.model.name.localeCompare(b.model.name));
  const result = placeReplicas(snapshot, demands.map((entry) => entry.demand));
  for (const placement of result.placements) {
    const owner = groups.get(placement.model);
    const canary = owner?.canary;
    actions.push({
      kind: "start",
      model: owner?.name ?? placement.model,
      profile: placement.profile,
      node: placement.node,
      cards: placement.cards,
      ...(placement.members !== undefined ? { members: placement.members.map((member) => ({ node: member.node, cards: member.cards })) } : {}),
      reason: canary ? `canary at ${canary.revision}` : "placed",
      ...(canary ? { canary } : {}),
    });
  }
  // Moves back to the preferred profile take only what is left once every missing replica was placed.
  actions.push(...promotions({ nodes: snapshot.nodes, replicas: [...held, ...heldByPlacements(result.placements, (name) => groups.get(name)?.profiles)] }, promotionCandidates));
  const preempted = new Set<string>();
  // Where each model stands, for the class rules: within a class only a model below its minimum takes, and only what another grew into.
  const heldCount = new Map<string, number>();
  for (const replica of held) heldCount.set(replica.model, (heldCount.get(replica.model) ?? 0) + 1);
  const standings = new Map<string, ModelStanding>([...models.values()].map((model) => [model.name, { modelClass: model.modelClass, min: model.min, replicas: heldCount.get(model.name) ?? 0 }]));
  const mayPreempt = preemptionGate(snapshot, standings);
  // Looked up by model: a full fleet refuses a demand per model, thousands of them in one pass.
  const refusalOf = new Map(result.refusals.map((refusal) => [refusal.model, refusal]));
  for (const { demand, model, withdrawing, evacuees, restartProfile } of demands) {
    const refusal = refusalOf.get(demand.model);
    // A canary is a trial: it preempts nothing, and waits for room without changing the model's state.
    if (model.canary) continue;
    if (!refusal) {
      if (model.placement?.state !== "placed") actions.push({ kind: "placement", model: model.name, state: "placed", reason: null });
      continue;
    }
    // A lower class gives way: its replicas drain, and the cards are placed on a later pass once they have stopped.
    const victims = mayPreempt(demand) ? victimsFor({ ...snapshot, replicas: held.filter((replica) => !preempted.has(replica.id)) }, demand, standings) : [];
    for (const victim of victims) {
      preempted.add(victim.id);
      if (withdrawn.has(victim.id)) continue;
      actions.push({ kind: "withdraw", id: victim.id, model: victim.model, node: victim.node, reason: `preempted by ${model.name} (${model.modelClass})`, preemptedFor: model.name });
    }
    // A draining node is emptied even where no replacement fits: the operator asked for the machine.
    for (const replica of evacuees) {
      if (withdrawn.has(replica.id)) continue;
      withdrawn.add(replica.id);
      actions.push({ kind: "withdraw", id: replica.id, model: model.name, node: replica.node, reason: `node ${replica.node} is draining, and no other node has room for ${model.name} (${refusal.reason})` });
    }
    // Every victim is a held replica, so any preempted at all means some still hold their cards
    // (asked of the set, not of every held replica per refused demand: that was quadratic).
    const waitingForVictims = victims.length > 0 || preempted.size > 0;
    // Its own replicas still stopping (an in-place restart, a scale-down) free cards it may need: not a refusal yet.
    // A restart held to its replicas' profile serves from the old ones meanwhile: it waits, it is not refused.
    const state = waitingForVictims || withdrawing || restartProfile !== undefined ? "waiting" : "unplaceable";
    const reason = waitingForVictims
      ? `waiting for ${victims.map((victim) => victim.id).join(", ") || "preempted replicas"} to stop`
      : withdrawing
        ? `waiting for its stopping replicas to free their cards (${refusal.reason})`
        : restartProfile !== undefined
          ? `restarting ${model.name} waits for room on its profile ${restartProfile}: ${refusal.reason}`
          : refusal.reason;
    if (model.placement?.state !== state || model.placement.reason !== reason) actions.push({ kind: "placement", model: model.name, state, reason });
  }
  return actions;
}
