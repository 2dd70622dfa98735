import type { Plan, PlanCandidate } from "./candidates.js";
import { formatContext, formatGiB } from "./format.js";

export interface RenderOptions {
  /** Rows shown before "… N more" (the JSON always has all). Default 30. */
  readonly maxRows?: number;
}

function poolLabel(candidate: PlanCandidate): string {
  const pool = candidate.pool;
  if (pool.gpu_class === "cpu") return `cpu ${formatGiB(pool.card_memory_bytes)} (${pool.cards_total} host${pool.cards_total === 1 ? "" : "s"})`;
  return `${pool.gpu_class}-${Math.round(pool.card_memory_bytes / 1024 ** 3)}G@${pool.fabric} ${pool.cards_free}/${pool.cards_total} free`;
}

/** Cards per replica; "2×8 pp2" for two nodes of eight cards with two pipeline stages. */
function gpusLabel(candidate: PlanCandidate): string {
  if (candidate.gpus === 0) return "cpu";
  if (candidate.nodes <= 1 || !candidate.parallel) return String(candidate.gpus);
  const split = candidate.parallel.pipeline > 1 ? `tp${candidate.parallel.tensor} pp${candidate.parallel.pipeline}` : `tp${candidate.parallel.tensor}`;
  return `${candidate.nodes}×${candidate.gpus} ${split}`;
}

/**
 * The plan as a person reads it: one header about the model, then one row
 * per candidate, best first, with the first reason a miss is short.
 */
export function renderPlanTable(plan: Plan, options: RenderOptions = {}): string {
  const architecture = plan.architecture;
  const lines: string[] = [];
  const parameters = `${(architecture.parameters / 1e9).toFixed(2)}B parameters`;
  const experts = architecture.experts ? `, ${architecture.experts} experts (${architecture.experts_per_token} per token)` : "";
  lines.push(`${plan.source}: ${architecture.model_type}, ${parameters}${experts}`);
  lines.push(
    `  ${architecture.layers} layers, ${architecture.attention_heads} attention heads, ${architecture.kv_heads} KV heads × ${architecture.head_dim}, ` +
      `trained context ${formatContext(architecture.trained_context)}, KV ${(architecture.kv_bytes_per_token / 1024).toFixed(0)} KiB/token, ` +
      `checkpoint ${architecture.checkpoint_dtype} ${formatGiB(architecture.checkpoint_bytes)}`,
  );
  lines.push(`  parameters counted from ${architecture.parameters_from}`);
  const requested = plan.requested_context !== undefined ? `, context asked ${formatContext(plan.requested_context)}` : "";
  lines.push(`  ${plan.gpu_memory_utilization.toFixed(2)} of each card usable${requested}`);
  lines.push("");
  if (plan.candidates.length === 0) {
    lines.push("No candidates: the fleet has no GPU pools and no CPU hosts.");
    return lines.join("\n");
  }
  const header = ["FIT", "POOL", "ENGINE", "QUANT", "GPUS", "WEIGHTS/CARD", "KV/TOKEN", "MAX CTX", "SHORT"];
  const maxRows = options.maxRows ?? 30;
  const shown = plan.candidates.slice(0, maxRows);
  const rows = shown.map((candidate) => [
    candidate.fits ? "yes" : "no",
    poolLabel(candidate),
    candidate.engine,
    candidate.requires ? `${candidate.quantization}*` : candidate.quantization,
    gpusLabel(candidate),
    formatGiB(candidate.weights_bytes_per_card),
    `${(candidate.kv_bytes_per_token / 1024).toFixed(0)} KiB`,
    formatContext(candidate.max_context),
    candidate.short?.[0] ?? "",
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? "").length)));
  const format = (row: readonly string[]): string =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join("  ")
      .trimEnd();
  lines.push(format(header));
  for (const row of rows) lines.push(format(row));
  const hidden = plan.candidates.length - shown.length;
  if (hidden > 0) lines.push(`… ${hidden} more candidates (--json lists all)`);
  if (shown.some((candidate) => candidate.requires)) {
    lines.push("* needs the model in that format first (a GGUF file, or an AWQ/GPTQ checkpoint): the source is 16-bit; --json says which for each");
  }
  return lines.join("\n");
}
