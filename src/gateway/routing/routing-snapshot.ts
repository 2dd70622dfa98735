import type { RoutingAdapter, RoutingModel, RoutingTable } from "../../protocol/index.js";

/** What a requested name resolves to: a model, and the adapter when the name was one of its adapters. */
export interface RoutingTarget {
  readonly model: RoutingModel;
  readonly adapter: RoutingAdapter | undefined;
}

/**
 * A routing table indexed for the request path: one map lookup per name.
 * Built once per table swap, never per request.
 */
export class RoutingSnapshot {
  readonly #targets = new Map<string, RoutingTarget>();
  readonly #models = new Map<string, RoutingModel>();

  constructor(readonly table: RoutingTable) {
    for (const model of table.models) {
      this.#models.set(model.name, model);
      this.#targets.set(model.name, { model, adapter: undefined });
      for (const adapter of model.adapters) this.#targets.set(adapter.name, { model, adapter });
    }
    for (const [alias, modelName] of Object.entries(table.aliases)) {
      const model = this.#models.get(modelName);
      if (model) this.#targets.set(alias, { model, adapter: undefined });
    }
  }

  get revision(): number {
    return this.table.revision;
  }

  resolve(name: string): RoutingTarget | undefined {
    return this.#targets.get(name);
  }

  model(name: string): RoutingModel | undefined {
    return this.#models.get(name);
  }

  /** Every name a caller may ask for, with the model behind it (GET /v1/models). */
  names(): { name: string; model: RoutingModel; adapter: RoutingAdapter | undefined }[] {
    return [...this.#targets.entries()].map(([name, target]) => ({ name, ...target }));
  }

  hasReadyReplica(modelName: string): boolean {
    return this.#models.get(modelName)?.replicas.some((replica) => replica.state === "ready") ?? false;
  }

  /** Why no replica of the model will come (placement refused it, or it is kept unplaced), when the table says so and none serves. */
  refusal(modelName: string): string | undefined {
    const model = this.#models.get(modelName);
    return model?.unavailable && model.replicas.length === 0 ? model.unavailable : undefined;
  }
}
