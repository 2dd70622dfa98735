import type { CatalogModel } from "../catalog/index.js";
import { DomainError } from "../errors/light.js";
import { dryRunAnswer, type Change, type DryRunAnswer } from "../protocol/index.js";
import type { ChangeToPreview } from "../reconcile/index.js";
import { type Store, updateModelStatus } from "../store/index.js";

export interface DemandParts {
  readonly store: Store;
  readonly catalog: { get(name: string): Promise<CatalogModel> };
  readonly preview: (change: ChangeToPreview) => Promise<Change[]>;
  /** Tells the reconciler to look again: the demand is recorded, its next pass starts a replica. */
  readonly wake: () => void;
  readonly now?: () => number;
}

/**
 * Demand for an on-demand model (the gateway reports it when a request finds
 * no ready replica): a replica starts on the reconciler's next pass, and the
 * idle timeout starts over.
 */
export class DemandService {
  constructor(private readonly parts: DemandParts) {}

  /** The admin API's demand: refused for an external model, which nothing is started for; with `dryRun`, what it would start. */
  async demand(name: string, dryRun: boolean): Promise<{ model: string; demand_at: string } | DryRunAnswer<{ model: string; demand_at: string }>> {
    const model = await this.parts.catalog.get(name);
    if (model.entry.external) {
      throw new DomainError("invalid_profile", `${name} is an external model: it runs at its provider, and nothing is started for it`, "Report demand for models with profiles.");
    }
    if (dryRun) return dryRunAnswer({ model: name, demand_at: new Date().toISOString() }, await this.parts.preview({ demand: name }));
    return { model: name, demand_at: await this.record(name) };
  }

  /** Records the demand and wakes the reconciler; answers when it was recorded. */
  async record(model: string): Promise<string> {
    const at = new Date((this.parts.now ?? Date.now)()).toISOString();
    await updateModelStatus(this.parts.store.db, model, { demand_at: at }, at);
    this.parts.wake();
    return at;
  }
}
