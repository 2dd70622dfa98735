import { type CatalogModel, type ResolvedProfile, redactUrl, sourceForAgents } from "../catalog/index.js";
import {
  dryRunAnswer,
  type Change,
  type DryRunAnswer,
  type FetchStatus,
  type PullNodeView,
  type PullSkippedView,
  type PullSourceView,
  type PullView,
  type NodeView,
} from "../protocol/index.js";
import { DomainError } from "../errors/light.js";
import { hostingProfiles, type DemandProfile } from "../placement/index.js";
import { fetchesOnAgent, startFetchOnAgent, type AgentAddress } from "./agent-client.js";
import type { CatalogService } from "./catalog-service.js";
import type { FleetService } from "./fleet-service.js";
import { snapshotFromViews } from "./snapshot-from-views.js";

export interface PullSettings {
  /** server.yaml's `mirror`, which `mirror:path` sources resolve against before an agent is asked. */
  readonly mirror: string | undefined;
  readonly gpuMemoryUtilization: number;
  /** A model's profiles as placement takes them: with each card's bytes once the model's files were read. */
  readonly demandProfiles: (model: CatalogModel) => DemandProfile[];
}

interface PullSource {
  readonly source: string;
  readonly resolved: string;
}

interface PullTarget {
  readonly node: NodeView;
  readonly profile: ResolvedProfile;
  readonly sources: readonly PullSource[];
}



function sourceView(source: PullSource, status: FetchStatus | undefined, unknownReason: string): PullSourceView {
  return {
    source: redactUrl(source.source),
    fetched_from: redactUrl(source.resolved),
    state: status?.state ?? "unknown",
    bytes_done: status?.bytes_done ?? 0,
    bytes_total: status?.bytes_total ?? null,
    size_bytes: status?.size_bytes ?? null,
    already_cached: status?.already_cached ?? false,
    simulated: status?.simulated ?? false,
    reason: status ? (status.reason ?? null) : unknownReason,
  };
}

function nodeState(sources: readonly PullSourceView[]): PullNodeView["state"] {
  if (sources.some((source) => source.state === "fetching")) return "fetching";
  return sources.every((source) => source.state === "cached") ? "cached" : "failed";
}

/**
 * `ctl model pull`: a model's weights fetched onto the nodes of its pool
 * before any replica needs them, so its first load is not a download.
 *
 * Progress is read from the agents when asked (`GET …/pull`), not carried
 * in heartbeats: it matters only while someone watches, so heartbeats stay
 * small, no row is written per megabyte, and any server sharing the
 * database can answer, since it calls the agents itself.
 */
export class PullService {
  constructor(
    private readonly catalog: CatalogService,
    private readonly fleet: FleetService,
    private readonly settings: PullSettings,
  ) {}

  /** Asks each node of the pool (or the one named) to fetch its profile's weights and adapters; answers where each stands. */
  async start(modelName: string, nodeName: string | undefined): Promise<PullView> {
    return await this.each(modelName, nodeName, async (target, address) => {
      const statuses = await Promise.all(target.sources.map(async (source) => await startFetchOnAgent(address, source.resolved)));
      return target.sources.map((source, index) => sourceView(source, statuses[index], ""));
    });
  }

  /**
   * A pull as a dry run: the same refusals (no node fits, an unknown node, a
   * mirror: source without a mirror), each node's sources as its agent has
   * them now, and a fetch for each one not cached there. Nothing is asked of
   * an agent but what it holds.
   */
  async preview(modelName: string, nodeName: string | undefined): Promise<DryRunAnswer<PullView>> {
    const view = await this.progress(modelName, nodeName);
    const changes = view.nodes.flatMap((node) =>
      node.sources
        .filter((source) => source.state !== "cached")
        .map((source): Change => ({ kind: "weights-fetch", summary: `fetch ${source.source} onto ${node.node} (profile ${node.profile}), resuming what is there`, model: view.model, node: node.node })),
    );
    return dryRunAnswer(view, changes);
  }

  /** Where a pull stands on each node of the pool (or the one named), read from the agents now. */
  async progress(modelName: string, nodeName: string | undefined): Promise<PullView> {
    return await this.each(modelName, nodeName, async (target, address) => {
      const known = new Map((await fetchesOnAgent(address)).map((status) => [status.source, status]));
      const unknown = `node ${target.node.name} has no pull of this source under way or done since its agent started; run \`llmgw ctl model pull ${modelName}\` (it resumes what was fetched)`;
      return target.sources.map((source) => sourceView(source, known.get(source.resolved), unknown));
    });
  }

  private async each(
    modelName: string,
    nodeName: string | undefined,
    visit: (target: PullTarget, address: AgentAddress) => Promise<PullSourceView[]>,
  ): Promise<PullView> {
    const { model, targets, skipped } = await this.targets(modelName, nodeName);
    const nodes = await Promise.all(
      targets.map(async (target): Promise<PullNodeView> => {
        try {
          const sources = await visit(target, await this.fleet.agentAddress(target.node.name));
          return { node: target.node.name, profile: target.profile.name, state: nodeState(sources), sources, reason: null };
        } catch (error) {
          const reason = error instanceof DomainError ? `${error.message}. ${error.hint}` : (error as Error).message;
          return { node: target.node.name, profile: target.profile.name, state: "failed", sources: [], reason };
        }
      }),
    );
    return { model: model.name, nodes, skipped };
  }

  /** The nodes of the model's pool, each with the profile it would run and that profile's sources as its agent fetches them. */
  private async targets(modelName: string, nodeName: string | undefined): Promise<{ model: CatalogModel; targets: PullTarget[]; skipped: PullSkippedView[] }> {
    const model = await this.catalog.get(modelName);
    if (model.entry.external) {
      throw new DomainError("invalid_profile", `${model.name} is an external model: it runs at its provider and has no weights to fetch`, "Pull models with profiles.");
    }
    // Resolved before any agent is asked: a mirror: source with no mirror configured is refused once, here.
    const sourcesOf = (profile: ResolvedProfile): PullSource[] =>
      [profile.source, ...(model.entry.adapters ?? []).map((adapter) => adapter.source)].map((source) => ({ source, resolved: sourceForAgents(source, { mirror: this.settings.mirror }) }));
    const allNodes = await this.fleet.listNodes();
    if (nodeName !== undefined) await this.fleet.getNode(nodeName);
    const nodes = nodeName === undefined ? allNodes : allNodes.filter((node) => node.name === nodeName);
    // No replicas: the whole node, as if nothing ran there. A pull readies a node for the model, whatever holds its cards today.
    const hosting = hostingProfiles(snapshotFromViews(nodes, [], []), this.settings.demandProfiles(model), this.settings.gpuMemoryUtilization);
    const targets: PullTarget[] = [];
    const skipped: PullSkippedView[] = [];
    hosting.forEach((host, index) => {
      const node = nodes[index] as NodeView;
      const profile = model.profiles.find((candidate) => candidate.name === host.profile);
      if (profile) targets.push({ node, profile, sources: sourcesOf(profile) });
      else skipped.push({ node: host.node, reason: host.refusals.map((refusal) => `${refusal.profile}: ${refusal.reason}`).join("; ") });
    });
    if (targets.length > 0) return { model, targets, skipped };
    const why = skipped.map((each) => `${each.node} (${each.reason})`).join("; ");
    throw new DomainError(
      "does_not_fit",
      nodeName !== undefined
        ? `${model.name} cannot run on node ${nodeName}, so its weights are not pulled there: ${skipped[0]?.reason ?? "no profile fits"}`
        : nodes.length === 0
          ? `no node has joined, so ${model.name} has nowhere to be pulled`
          : `no node can run any profile of ${model.name}, so its weights are pulled nowhere: ${why}`,
      nodeName !== undefined
        ? "Pull onto a node of the model's pool (leave --node out for all of them); `llmgw ctl nodes` lists each node's cards and engines."
        : "Join a node that has the cards and engine one of its profiles names (`llmgw ctl nodes` lists what each node has), or uncordon one.",
    );
  }
}
