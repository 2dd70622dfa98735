import type { CatalogModel } from "../catalog/index.js";
import { isDomainError } from "../errors/light.js";
import type { ModelFacts } from "../plan/index.js";
import { demandCardBytes, type CardBytes, type DemandProfile } from "../placement/index.js";
import { demandProfiles, type ReconcilerFacts } from "../reconcile/index.js";
import { type Store, findSourceFacts, saveSourceFacts } from "../store/index.js";
import { ModelFactsCache, type ModelFactsReader } from "./model-facts-cache.js";

export interface ModelFactsParts {
  /** Reads a source now, for a change a person waits on (the planner's reader). */
  readonly read: ModelFactsReader;
  /** Reads a source in the background, a few at a time; the same reader with a deadline that gives up a turn a silent mirror would hold. */
  readonly readInBackground?: ModelFactsReader;
  /** Where the figures read are kept, for when the files cannot be read later; without it nothing is kept. */
  readonly store?: Store;
  readonly now?: () => number;
}

/** A source's figures, and, when its files could not be read now, the kept figures used in their place. */
export interface FactsRead {
  readonly facts: ModelFacts;
  readonly stored?: { readonly readAt: string; readonly unreadable: string };
}

/**
 * Kept figures this release can use: a row written by another release or by
 * hand that lacks what the memory arithmetic reads first is not used, and the
 * change then says what it cannot check, as with no row at all.
 */
function usableFacts(kept: unknown): ModelFacts | undefined {
  if (typeof kept !== "object" || kept === null) return undefined;
  const facts = kept as Partial<ModelFacts>;
  return typeof facts.parameters === "number" && typeof facts.architecture?.layers === "number" && typeof facts.checkpoint?.bytes === "number" ? (kept as ModelFacts) : undefined;
}

const messageOf = (error: unknown) => (isDomainError(error) ? error.message : error instanceof Error ? error.message : String(error));

/**
 * A model's figures as the planner reads them from its files (config.json or
 * GGUF metadata, the weights' headers), for everyone who asks: the reconciler
 * through its `ReconcilerFacts` port, and the services that price a model's
 * cards (pull, headroom, card memory) or check a change (context, cards).
 * Reading in the background never holds up a pass; whoever must know now
 * (a change) reads now.
 *
 * Every read that succeeds is kept in the store. When the files cannot be
 * read later (the hub out of reach, the mirror gone), the kept figures are
 * used in their place and the answer says so: an air-gapped server keeps
 * checking changes and pricing cards with what it read when it could.
 */
export class ModelFactsService implements ReconcilerFacts {
  private readonly cache: ModelFactsCache;
  private readonly readListeners = new Set<() => void>();

  constructor(private readonly parts: ModelFactsParts) {
    const background = parts.readInBackground ?? parts.read;
    this.cache = new ModelFactsCache(async (source) => (await this.readKeeping(background, source)).facts, () => this.readListeners.forEach((listener) => listener()), parts.now);
  }

  /** Calls `listener` each time a background read brings a source's figures (the reconciler wakes: placement can now check memory). */
  whenFactsRead(listener: () => void): void {
    this.readListeners.add(listener);
  }

  get(source: string): ModelFacts | undefined {
    return this.cache.get(source);
  }

  reading(source: string): boolean {
    return this.cache.reading(source);
  }

  whenRead(source: string, withinMs: number): Promise<ModelFacts | undefined> {
    return this.cache.whenRead(source, withinMs);
  }

  /** Reads a source's figures now, or the kept ones when its files cannot be read; throws what the reader threw when none were kept. */
  async read(source: string): Promise<FactsRead> {
    return await this.readKeeping(this.parts.read, source);
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

  private async readKeeping(reader: ModelFactsReader, source: string): Promise<FactsRead> {
    const { store } = this.parts;
    let facts: ModelFacts;
    try {
      facts = await reader(source);
    } catch (error) {
      // A store that cannot answer either leaves the read's own failure to report: it names the source and why.
      const kept = store ? await findSourceFacts(store.db, source).catch(() => undefined) : undefined;
      const keptFacts = usableFacts(kept?.facts);
      if (!kept || !keptFacts) throw error;
      return { facts: keptFacts, stored: { readAt: kept.read_at, unreadable: messageOf(error) } };
    }
    // Keeping is for later; the figures read now answer now even when the store cannot take them (the next read tries again).
    if (store) await saveSourceFacts(store.db, source, facts, new Date((this.parts.now ?? Date.now)()).toISOString()).catch(() => undefined);
    return { facts };
  }
}
