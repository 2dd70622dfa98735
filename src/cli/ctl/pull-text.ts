import type { PullNodeView, PullView } from "../../protocol/index.js";

/** "512 B", "45.3 MiB", "14.2 GiB": binary units, one decimal, as a download is read. */
export function formatSize(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

function percent(done: number, total: number): string {
  return `${Math.floor((total === 0 ? 1 : done / total) * 100)}%`;
}

/** One node's pull while it runs: "node-a (cpu)  fetching  12.0 MiB of 48.0 MiB (25%)". */
export function describePullProgress(node: PullNodeView): string {
  const where = `${node.node} (${node.profile})`;
  if (node.state !== "fetching") return `${where}  ${node.state}`;
  const done = node.sources.reduce((sum, source) => sum + (source.state === "cached" ? (source.size_bytes ?? source.bytes_done) : source.bytes_done), 0);
  const totals = node.sources.map((source) => (source.state === "cached" ? (source.size_bytes ?? source.bytes_done) : source.bytes_total));
  const known = totals.every((total) => total !== null);
  const total = totals.reduce<number>((sum, each) => sum + (each ?? 0), 0);
  return known ? `${where}  fetching  ${formatSize(done)} of ${formatSize(total)} (${percent(done, total)})` : `${where}  fetching  ${formatSize(done)} so far`;
}

/**
 * What each node holds once the pull is over: the size per source, whether
 * it was there already, or the exact error. Nodes the model cannot run on
 * are named with why, so a node missing from the list is not a mystery.
 */
export function describePullResult(pull: PullView): string {
  const lines: string[] = [];
  for (const node of pull.nodes) {
    const where = `${node.node} (${node.profile})`;
    if (node.reason !== null) {
      lines.push(`${where}  failed: ${node.reason}`);
      continue;
    }
    const size = node.sources.reduce((sum, source) => sum + (source.size_bytes ?? 0), 0);
    const cached = node.state === "cached";
    const simulated = cached && node.sources.every((source) => source.simulated);
    const already = cached && node.sources.every((source) => source.already_cached || source.simulated);
    lines.push(
      `${where}  ${
        !cached ? node.state : simulated ? "simulated: a simulated agent pretends its weights, nothing was fetched" : `cached ${formatSize(size)}${already ? " (already cached: nothing fetched)" : ""}`
      }`,
    );
    for (const source of node.sources) {
      const state = source.state === "cached" ? (source.simulated ? "pretended" : `${formatSize(source.size_bytes ?? 0)}${source.already_cached ? ", already cached" : ""}`) : source.state;
      const from = source.fetched_from !== source.source ? ` from ${source.fetched_from}` : "";
      lines.push(`  ${source.source}${from}  ${state}${source.reason ? `: ${source.reason}` : ""}`);
    }
  }
  for (const skipped of pull.skipped) lines.push(`${skipped.node}  not pulled: cannot run ${pull.model} (${skipped.reason})`);
  return lines.join("\n");
}

/** Every node has finished, one way or the other. */
export function pullFinished(pull: PullView): boolean {
  return pull.nodes.every((node) => node.state !== "fetching");
}
