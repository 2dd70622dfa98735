import type { CatalogModel } from "../catalog/catalog-model.js";
import type { ModelFacts } from "../plan/model-facts.js";
import { demandCardBytes, type CardBytes, type DemandProfile } from "../placement/index.js";
import { demandProfiles } from "../reconcile/desired-model.js";
import type { ReconcilerFacts } from "../reconcile/reconciler-ports.js";
import { ModelFactsCache, type ModelFactsReader } from "./model-facts-cache.js";

export interface ModelFactsParts {
  /** Reads a source now, for a change a person waits on (the planner's reader). */
  readonly read: ModelFactsReader;
  /** Reads a source in the background, a few at a time; the same reader with a deadline that gives up a turn a silent mirror would hold. */
  readonly readInBackground?: ModelFactsReader;
  readonly now?: () => number;
}

/**
 * A model's figures as the planner reads them from its files (config.json or
 * GGUF metadata, the weights' headers), for everyone who asks: the reconciler
 * through its `ReconcilerFacts` port, and the services that price a model's
 * cards (pull, headroom, card memory) or check a change (context, cards).
 * Reading in the background never holds up a pass; whoever must know now
 * (a change) reads now.
 */
export class ModelFactsService implements ReconcilerFacts {
  private readonly cache: ModelFactsCache;
  private readonly readListeners = new Set<() => void>();

  constructor(private readonly parts: ModelFactsParts) {
    this.cache = new ModelFactsCache(parts.readInBackground ?? parts.read, () => this.readListeners.forEach((listener) => listener()), parts.now);
  }

  /** Calls `listener` each time a background read brings a source's figures (the reconciler wakes: placement can now check memory). */
  whenFactsRead(listener: () => void): void {
    this.readListeners.add(listener);
  }

  get(source: string): ModelFacts | undefined {
    return this.cache.get(source);
  }

  whenRead(source: string, withinMs: number): Promise<ModelFacts | undefined> {
    return this.cache.whenRead(source, withinMs);
  }

  /** Reads a source's figures now; throws what the reader throws when its files cannot be read. */
  async read(source: string): Promise<ModelFacts> {
    return await this.parts.read(source);
  }

  /** A model's profiles as placement takes them, with each card's bytes once its files were read. */
  demandProfiles(model: CatalogModel): DemandProfile[] {
    return demandProfiles(model, this);
  }

  /** The planner's figures for one card of a replica of this profile, as placement prices it; undefined until the model's files are read. */
  cardBytes(model: CatalogModel, profileName: string): CardBytes | undefined {
    const profile = model.profiles.find((candidate) => candidate.name === profileName);
    if (!profile || profile.gpus <= 0 || profile.engine === "comfyui") return undefined;
    const facts = this.cache.get(profile.source);
    return facts ? demandCardBytes(facts, profile, model.entry.context) : undefined;
  }
}
