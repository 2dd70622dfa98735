import type { Actor, CatalogModel, Preset, ModelEntry } from "../catalog/index.js";
import { DomainError, didYouMean } from "../errors/index.js";
import { entryFromMirror, type MirrorManifest, type ModelFacts } from "../plan/index.js";
import type { NodeView, PresetView, ReplicaView } from "../protocol/index.js";
import type { CatalogPreview, CatalogService } from "./catalog-service.js";
import { plannerReads, presetView, type SourceFacts } from "./preset-view.js";
import { snapshotFromViews } from "./snapshot-from-views.js";

/** The live fleet as the API lists it; empty for a server without fleet routes. */
export interface PresetFleet {
  listNodes(): Promise<NodeView[]>;
  listReplicas(): Promise<ReplicaView[]>;
}

export interface PresetSettings {
  /** Reads a source's config and weight headers through the server's hub endpoint, token and mirror. */
  readonly readFacts: (source: string) => Promise<ModelFacts>;
  /** The size of one file a ComfyUI workflow loads, asked the way the source check asks it. */
  readonly readFileSize: (source: string) => Promise<number>;
  readonly gpuMemoryUtilization: number;
  /**
   * The manifest of server.yaml's `mirror`, read anew at each listing and
   * add (a pull may add to the mirror while the server runs): the sources it
   * lists are read from the mirror, and added as its `mirror:` copies.
   */
  readonly mirrorManifest?: () => Promise<MirrorManifest | undefined>;
}

/**
 * The shipped presets against this server: what each needs and where it
 * would run now, and adding one to the catalog. A source's facts are read
 * once and kept (the presets name fixed repositories); a failed read is
 * tried again at the next listing, so a hub that was down or a token added
 * since is picked up without a restart.
 */
export class PresetService {
  private readonly facts = new Map<string, Promise<ModelFacts>>();
  private readonly fileSizes = new Map<string, Promise<number>>();

  constructor(
    private readonly presets: () => readonly Preset[],
    private readonly catalog: CatalogService,
    private readonly fleet: PresetFleet | undefined,
    private readonly settings: PresetSettings,
  ) {}

  async list(): Promise<PresetView[]> {
    const presets = await this.presetsNow();
    const sources = [...new Set(presets.flatMap((preset) => (preset.model.profiles ?? []).filter(plannerReads).map((profile) => profile.source)))];
    const comfyFiles = [...new Set(presets.flatMap((preset) => (preset.model.profiles ?? []).flatMap((profile) => (profile.comfy?.files ?? []).map((file) => file.source))))];
    const [read, sized] = await Promise.all([
      Promise.all(sources.map((source) => readOrWhy(source, () => cachedRead(this.facts, source, this.settings.readFacts)))),
      Promise.all(comfyFiles.map((source) => readOrWhy(source, () => cachedRead(this.fileSizes, source, this.settings.readFileSize)))),
    ]);
    const [models, nodes, replicas] = await Promise.all([this.catalog.list(), this.fleet?.listNodes() ?? [], this.fleet?.listReplicas() ?? []]);
    const snapshot = snapshotFromViews(nodes, replicas, models);
    const facts: SourceFacts = new Map<string, ModelFacts | { readonly unreadable: string }>(read);
    const realLlamaCpp = new Map(nodes.flatMap((node) => (!node.simulated && node.llama_cpp ? [[node.name, node.llama_cpp] as const] : [])));
    return presets.map((preset) =>
      presetView(preset, {
        facts,
        fileSizes: new Map(sized),
        snapshot,
        addedAs: models.filter((model) => model.entry.preset === preset.name).map((model) => model.name),
        gpuMemoryUtilization: this.settings.gpuMemoryUtilization,
        realLlamaCpp,
      }),
    );
  }

  async view(name: string): Promise<PresetView> {
    const preset = this.find(name, this.presets());
    return (await this.list()).find((view) => view.name === preset.name) as PresetView;
  }

  /** Adds the preset's model (under `asName` when given), marked with the preset's name in the entry and so in the audit. */
  /**
   * Adds a preset under its name or `asName`. `beforeStore` runs once the
   * catalog's own rules passed and before anything is written: the route's
   * source check, so a preset whose hub cannot be reached is refused like any
   * other model instead of failing on a node later.
   */
  async add<Checked>(
    name: string,
    asName: string | undefined,
    actor: Actor,
    beforeStore: (entry: ModelEntry) => Promise<Checked>,
    /** A dry run: the same checks, and the catalog the add would produce instead of writing it. */
    dryRun?: (preview: CatalogPreview) => void,
  ): Promise<{ model: CatalogModel; checked: Checked }> {
    const preset = this.find(name, await this.presetsNow());
    const entry: ModelEntry = { ...preset.model, name: asName ?? preset.model.name, preset: preset.name };
    try {
      const preview = await this.catalog.previewAdd(entry);
      const checked = await beforeStore(entry);
      if (dryRun) {
        dryRun(preview);
        return { model: preview.model, checked };
      }
      return { model: await this.catalog.add(entry, actor), checked };
    } catch (error) {
      // The catalog's message names the clash; the way out for a preset is another name.
      if (error instanceof DomainError && error.code === "name_taken") {
        throw new DomainError(
          "name_taken",
          `cannot add preset ${preset.name} as "${entry.name}": ${error.message}`,
          `Add it under another name: \`llmgw ctl model add ${preset.name} --name NAME\`; nothing was changed.`,
          error.details,
        );
      }
      throw error;
    }
  }

  /** The presets with the sources the mirror holds read as its copies. */
  private async presetsNow(): Promise<readonly Preset[]> {
    const manifest = await this.settings.mirrorManifest?.();
    return manifest ? this.presets().map((preset) => ({ ...preset, model: entryFromMirror(preset.model, manifest) })) : this.presets();
  }

  private find(name: string, presets: readonly Preset[]): Preset {
    const preset = presets.find((candidate) => candidate.name === name);
    if (!preset) {
      throw new DomainError(
        "preset_not_found",
        `no preset named "${name}"${didYouMean(name, presets.map((known) => known.name))}; the presets are: ${presets.map((known) => known.name).join(", ")}`,
        "List them with what each needs and where it would run: `llmgw ctl model presets`.",
      );
    }
    return preset;
  }
}

/** One read per source, kept once it succeeds; a failed one is forgotten so the next listing tries again. */
function cachedRead<T>(cache: Map<string, Promise<T>>, source: string, read: (source: string) => Promise<T>): Promise<T> {
  let reading = cache.get(source);
  if (!reading) {
    reading = read(source);
    cache.set(source, reading);
    reading.catch(() => cache.delete(source));
  }
  return reading;
}

/** A read's answer, or why it failed, so one unreadable source does not hide the other presets. */
async function readOrWhy<T>(source: string, read: () => Promise<T>): Promise<readonly [string, T | { readonly unreadable: string }]> {
  try {
    return [source, await read()] as const;
  } catch (error) {
    return [source, { unreadable: error instanceof Error ? error.message : String(error) }] as const;
  }
}
