import type { CatalogModel } from "../catalog/index.js";
import { DomainError } from "../errors/light.js";
import {
  checkRestartRoom,
  observe,
  replacedByRestart,
  type Observation,
  readFleetState,
  type FleetStateSources,
  type ChangeToPreview,
  type ReconcilerFacts,
  type ObservedReplica,
} from "../reconcile/index.js";
import { dryRunAnswer, type Change, type DryRunAnswer } from "../protocol/index.js";
import { insertEvents, updateModelStatus } from "../store/index.js";

export interface RestartParts extends FleetStateSources {
  readonly catalog: FleetStateSources["catalog"] & { get(name: string): Promise<CatalogModel> };
  /** The planner's figures, so the replacement is priced as a pass would price it. */
  readonly facts: Pick<ReconcilerFacts, "get"> | undefined;
  /** What the reconciler's passes would do after a change (a dry run). */
  readonly preview: (change: ChangeToPreview) => Promise<Change[]>;
  /** Tells the reconciler to look again: the restart is recorded, its next pass acts on it. */
  readonly wake: () => void;
  readonly now?: () => number;
}

export interface RestartOutcome {
  readonly restart_before: string;
  readonly in_place: boolean;
  readonly replicas: number;
}

/**
 * Rolling restarts: every replica the reconciler placed before now is
 * replaced, each new one started beside the old and the old drained once it
 * is ready. Without room for one replica beside them it refuses (nothing is
 * changed) and says that --in-place stops each first. The restart is a
 * record the reconciler's passes act on; nothing here starts or stops.
 */
export class RestartService {
  constructor(private readonly parts: RestartParts) {}

  private now(): number {
    return (this.parts.now ?? Date.now)();
  }

  /** `ctl restart`: the model named, checked as `request` would be; with `dryRun`, what it would do, writing nothing. */
  async restart(name: string, inPlace: boolean, actor: string, dryRun: boolean): Promise<({ model: string } & RestartOutcome) | DryRunAnswer<{ model: string } & RestartOutcome>> {
    const model = await this.parts.catalog.get(name);
    if (model.entry.external) {
      throw new DomainError("invalid_profile", `${name} is an external model: it has no replicas to restart`, "Restart models with profiles.");
    }
    if (dryRun) {
      const replicas = await this.check(model, inPlace);
      const outcome = { model: name, restart_before: new Date().toISOString(), in_place: inPlace, replicas: replicas.length };
      return dryRunAnswer(outcome, await this.parts.preview({ restart: { model: name, inPlace } }));
    }
    return { model: name, ...(await this.request(model, inPlace, actor)) };
  }

  /** Records the restart of `model` (as it is now, or as a change makes it) with its event, and wakes the reconciler. */
  async request(model: CatalogModel, inPlace: boolean, actor: string): Promise<RestartOutcome> {
    const nowMs = this.now();
    const replicas = await this.check(model, inPlace, nowMs);
    const at = new Date(nowMs).toISOString();
    await updateModelStatus(this.parts.store.db, model.name, { restart_before: at, restart_in_place: inPlace ? 1 : 0 }, at);
    await insertEvents(this.parts.store.db, [
      { at, kind: "model-restarting", model: model.name, replica: null, node: null, message: `${actor} restarts ${model.name}${inPlace ? " in place" : ""}: ${replicas.length} replica${replicas.length === 1 ? "" : "s"} to replace` },
    ]);
    this.parts.wake();
    return { restart_before: at, in_place: inPlace, replicas: replicas.length };
  }

  /** Refuses a restart as `request` would, writing nothing; answers the replicas it would replace. */
  async check(model: CatalogModel, inPlace: boolean, nowMs: number = this.now()): Promise<ObservedReplica[]> {
    const observation = await this.observeNow(nowMs);
    const replicas = observation.observed.replicas.filter((replica) => replacedByRestart(replica, model.name));
    if (!inPlace && replicas.length > 0) checkRestartRoom(observation, model, this.parts.facts, `llmgw ctl restart --model ${model.name} --in-place`);
    return replicas;
  }

  /**
   * Refuses (no_room) when one replica of `model` as given could not be
   * placed beside the replicas running now, naming `inPlaceCommand` as the
   * way out. A change that restarts by surge asks this with the model as it
   * will be, before writing anything, so a refusal leaves the catalog as it was.
   */
  async refuseWithoutRoom(model: CatalogModel, inPlaceCommand: string): Promise<void> {
    checkRestartRoom(await this.observeNow(this.now()), model, this.parts.facts, inPlaceCommand);
  }

  private async observeNow(nowMs: number): Promise<Observation> {
    return observe(await readFleetState(this.parts), nowMs);
  }
}
