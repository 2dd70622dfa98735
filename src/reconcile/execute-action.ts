import type { ReconcileSettings } from "../catalog/index.js";
import { type Store, deleteReplicaIntent, emptyModelStatus, updateModelStatus, withdrawReplicaIntent, type ModelStatusRow } from "../store/index.js";
import { backoffMs } from "./backoff.js";
import { failureMessage } from "./failure-message.js";
import type { ReconcilerFleet } from "./reconciler-ports.js";
import type { Action } from "./types.js";
import type { EventKind } from "../protocol/index.js";

/** What carrying out an action needs: the store, the settings, the fleet, and the reconciler's in-memory marks. */
export interface ActionContext {
  readonly store: Store;
  readonly settings: ReconcileSettings;
  readonly fleet: ReconcilerFleet;
  /** Replica ids whose start is being sent again, so two passes do not send it twice. */
  readonly starting: Set<string>;
  /** When each model was last seen busy. */
  readonly busyAt: Map<string, number>;
  /** The planner's weights per card for a start, once the model's files were read: a simulated engine decodes at the card's bandwidth over them. */
  readonly simulationOf?: (model: string, profile: string, node: string) => Promise<{ readonly weights_bytes_per_card: number } | undefined>;
}

/** Carries out one action of the diff: the intent written first, then the side effect, then its event. */
export async function executeAction(
  context: ActionContext,
  action: Action,
  statusOf: Map<string, ModelStatusRow>,
  event: (kind: EventKind, message: string, facts?: { model?: string; replica?: string; node?: string }) => void,
  at: string,
  nowMs: number,
): Promise<void> {
  const db = context.store.db;
  switch (action.kind) {
    case "record-failure": {
      const failures = (statusOf.get(action.model)?.failures ?? 0) + 1;
      // A model that still serves elsewhere is not in a failure streak (the next pass would end it):
      // its replacement is placed at once, and the event says so rather than a wait that is not kept.
      const waitMs = action.anotherServes ? 0 : backoffMs(failures, context.settings.backoffInitialMs, context.settings.backoffMaxMs);
      const retryAt = waitMs > 0 ? new Date(nowMs + waitMs).toISOString() : null;
      await updateModelStatus(db, action.model, { failures, last_failure: action.reason, last_failure_at: at, backoff_until: retryAt }, at);
      statusOf.set(action.model, { ...(statusOf.get(action.model) ?? emptyModelStatus(action.model, at)), failures, backoff_until: retryAt });
      event("replica-failed", failureMessage(action, failures, waitMs), {
        model: action.model,
        replica: action.id,
        node: action.node,
      });
      // Clears it on its agent and forgets the row, so its cards are free for the next start.
      await context.fleet.stopReplica(action.id, false).catch(() => undefined);
      await deleteReplicaIntent(db, action.id);
      return;
    }
    case "abandon":
      await withdrawReplicaIntent(db, action.id, action.model, at, action.reason);
      // On a lost node the stop is kept and delivered when the node reports again.
      await context.fleet.stopReplica(action.id, false).catch(() => undefined);
      event("replica-lost", `replica ${action.id} of ${action.model} is on lost node ${action.node}; it is replaced elsewhere and stopped if the node returns`, {
        model: action.model,
        replica: action.id,
        node: action.node,
      });
      return;
    case "withdraw":
      await withdrawReplicaIntent(db, action.id, action.model, at, action.reason);
      event(action.preemptedFor ? "replica-preempted" : action.promotedTo ? "replica-promoted-profile" : "replica-draining", `replica ${action.id} of ${action.model} on ${action.node} leaves routing and drains: ${action.reason}`, {
        model: action.model,
        replica: action.id,
        node: action.node,
      });
      return;
    case "stop":
      await context.fleet.stopReplica(action.id, true);
      return;
    case "stop-member":
      await context.fleet.stopReplica(action.id, false).catch(() => undefined);
      return;
    case "resume":
      if (context.starting.has(action.id)) return;
      context.starting.add(action.id);
      try {
        await context.fleet.resumeStart(action.id);
        event("replica-started", `replica ${action.id} of ${action.model} sent again to ${action.node} (its start was recorded but not confirmed)`, { model: action.model, replica: action.id, node: action.node });
      } finally {
        context.starting.delete(action.id);
      }
      return;
    case "start": {
      const cards = action.members
        ? ` across ${action.members.map((member, rank) => `${member.node} (rank ${rank}, cards ${member.cards.join(",")})`).join(", ")}`
        : action.cards.length > 0
          ? ` on ${action.node} cards ${action.cards.join(",")}`
          : ` on ${action.node} (CPU)`;
      try {
        const simulation = await context.simulationOf?.(action.model, action.profile, action.node);
        const id = simulation === undefined ? await context.fleet.startPlaced(action) : await context.fleet.startPlaced(action, simulation);
        const why = action.promotes ? `, moving back to its preferred profile: replica ${action.promotes.id} on ${action.promotes.profile} gives way once it serves` : "";
        event("replica-placed", `${action.model}/${action.profile} placed${cards}${why}`, { model: action.model, replica: id, node: action.node });
        event("replica-started", `replica ${id} of ${action.model} started on ${action.node}`, { model: action.model, replica: id, node: action.node });
      } catch (error) {
        event("replica-failed", `${action.model}/${action.profile} could not be started${cards}: ${(error as Error).message}`, { model: action.model, node: action.node });
      }
      return;
    }
    case "placement": {
      await updateModelStatus(db, action.model, { placement_state: action.state, placement_reason: action.reason }, at);
      if (action.state === "unplaceable") event("model-unplaceable", `${action.model} cannot be placed: ${action.reason ?? "no reason given"}`, { model: action.model });
      if (action.state === "waiting" && action.reason) event("model-waiting", `${action.model}: ${action.reason}`, { model: action.model });
      return;
    }
    case "restart-finished":
      await updateModelStatus(db, action.model, { restart_before: null, restart_in_place: 0 }, at);
      event("model-restarted", `every replica of ${action.model} was replaced`, { model: action.model });
      return;
    case "demand-seen": {
      // Written at most once a second per model: a busy model would otherwise write on every pass for nothing.
      const previous = statusOf.get(action.model)?.demand_at;
      if (previous && nowMs - Date.parse(previous) < 1000) return;
      await updateModelStatus(db, action.model, { demand_at: at }, at);
      return;
    }
    case "busy":
      context.busyAt.set(action.model, nowMs);
      return;
  }
}

